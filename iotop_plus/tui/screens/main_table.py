"""The main screen's device-table keys: the name filter, all devices, column sets, sorting.

:class:`TableKeys` is a collaborator the main screen owns. It is given what it needs: the
screen as a :class:`TableView` (its widgets by id, its views, its selection, the frame shown)
and the feed's switch for the tracer's latency. Its ``action_*`` methods are the screen's
actions (the screen takes them as its own); the filter box's ``Changed`` handler stays on
the screen (Textual collects ``@on`` handlers from the screen class itself).

The filter box and the latency view are mounted the first time they are shown (under
``#left``, around the table): until then they are not on the screen at all.

It also says which device a key acts on: the one under the table's cursor
(:meth:`TableKeys.device_to_act_on`), which the side-panel keys ask for too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from textual.css.query import NoMatches
from textual.widget import Widget

from iotop_plus.tui.messages import Notifies
from iotop_plus.tui.screens.main_views import ScreenViews
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.table_columns import LATENCY_SET

if TYPE_CHECKING:
    from iotop_plus.tui.shown import Shown, ShownViews
    from iotop_plus.tui.widgets.filter_input import FilterInput
    from iotop_plus.tui.widgets.latency_view import LatencyView

W = TypeVar("W", bound="Widget")


class TableView(Notifies, Protocol):
    """What the table's keys need of the main screen."""

    selected_device: str | None
    """The device the charts and panels are about."""
    shown: Shown
    """The frame on screen."""

    layout_views: ScreenViews
    """Which views are shown (narrow: one at a time)."""
    views: ShownViews
    """The widgets that show the frame on screen (the latency view joins them)."""

    def action_view(self, view: str) -> None:
        """In narrow mode, show one of the views."""

    def select_device(self, name: str | None) -> None:
        """Make ``name`` the device the charts and panels are about."""

    def set_focus(self, widget: Widget | None) -> None:
        """Focus ``widget`` at once (or nothing)."""

    def query_one(self, selector: str, expect_type: type[W]) -> W:
        """The screen's widget ``selector``."""


class TableKeys:
    """The device table's keys on the main screen, and the device a key acts on.

    Args:
        view: The main screen: its table, filter box and latency view, its selection.
        want_latency: Asks the frames for the tracer's latency figures (or no longer).
    """

    def __init__(self, view: TableView, want_latency: Callable[[bool], object]) -> None:
        self.view = view
        self.want_latency = want_latency

    @property
    def table(self) -> DeviceTable:
        """The device table."""
        return self.view.query_one("#table", DeviceTable)

    def _find(self, selector: str, kind: type[W]) -> W | None:
        try:
            return self.view.query_one(selector, kind)
        except NoMatches:
            return None

    def _mount_by_table(self, widget: Widget, before: bool) -> None:
        """Mount ``widget`` next to the table: before it or after it."""
        table = self.table
        parent = table.parent
        if isinstance(parent, Widget):
            if before:
                parent.mount(widget, before=table)
            else:
                parent.mount(widget, after=table)

    @property
    def box(self) -> FilterInput | None:
        """The name filter's text box, once it was shown (its module is not loaded before)."""
        return cast("FilterInput | None", self._find("#filter", Widget))

    @property
    def latency_view(self) -> LatencyView | None:
        """The latency view, once it was shown (its module is not loaded before)."""
        return cast("LatencyView | None", self._find("#latency-view", Widget))

    def action_filter(self) -> None:
        """Show the name filter (mounted over the table the first time) and focus it."""
        from iotop_plus.tui.widgets.filter_input import FilterInput

        if self.view.layout_views.narrow:
            self.view.action_view("view-table")
        box = self.box
        if box is None:
            box = FilterInput(
                done=self.finish_filter,  # Enter in the filter box
                clear=self.action_clear_filter,
                placeholder="filter devices by name (Enter keeps, Esc clears)",
                id="filter",
            )
            self._mount_by_table(box, before=True)
        box.add_class("shown")
        # At once, not box.focus() (which waits a turn of the message queue): the name typed
        # right after "/" may already be queued, and would go to the table's keys.
        self.view.set_focus(box)

    def action_clear_filter(self) -> None:
        """Drop the filter."""
        box = self.box
        if box is not None:
            box.value = ""
            box.remove_class("shown")
        table = self.table
        table.set_filter("")
        table.focus()

    def finish_filter(self, value: str) -> None:
        """Enter in the filter, handled in turn with the keys typed before it (see
        :class:`FilterInput`): apply the box's text, then select the device named exactly,
        else the first match in the current sort order, else nothing."""
        text = value.strip()
        box = self.box
        if not text and box is not None:
            box.remove_class("shown")
        table = self.table
        table.pick(text)
        # At once, not when the table's DeviceSelected arrives: a key typed right after
        # Enter (R, S, d, X in the same burst) must act on this device.
        self.view.select_device(table.selected)
        self.view.set_focus(table)  # at once: the key typed next is the table's

    def action_toggle_all(self) -> None:
        """Switch between the default device selection and all devices."""
        table = self.table
        table.toggle_all()
        self.view.notify(
            "showing all devices" if table.show_all else "showing used whole disks",
            timeout=2,
        )

    def action_cycle_columns(self) -> None:
        """Next column set."""
        name = self.table.cycle_columns()
        self.view.notify(f"columns: {name}", timeout=2)
        self.show_latency_view(name == LATENCY_SET)

    def show_latency_view(self, on: bool) -> None:
        """Show (or hide) the latency view (mounted under the table the first time); the
        tracer runs only while it is shown."""
        from iotop_plus.tui.widgets.latency_view import LatencyView

        latency = self.latency_view
        if latency is None and on:
            latency = LatencyView(id="latency-view")
            latency.display = False
            self._mount_by_table(latency, before=False)
            self.view.views.follow_tree(latency)  # it shows each frame from now on
        if latency is None or latency.display == on:
            return
        latency.display = on
        self.want_latency(on)
        if on:
            shown = self.view.shown.frame
            latency.show_latency(
                None if shown is None else shown.latency, self.view.selected_device
            )

    def action_sort(self, step: int) -> None:
        """Sort by the previous or next column."""
        title = self.table.move_sort(step)
        self.view.notify(f"sorted by {title}", timeout=2)

    def action_reverse_sort(self) -> None:
        """Reverse the sort order."""
        self.table.reverse_sort()

    def device_to_act_on(self) -> str | None:
        """The device under the table's cursor, for R, S, d and X.

        The table tells the screen with a message, which a key typed in the same burst can
        overtake (Down then R): the table's own selection is the one shown, so catch up first.
        """
        selected = self.table.selected
        if selected != self.view.selected_device:
            self.view.select_device(selected)
        return self.view.selected_device

    def device_or_say(self) -> str | None:
        """The device to act on; None, and "no device selected" said, when there is none
        (a filter that matches nothing)."""
        name = self.device_to_act_on()
        if name is None:
            self.view.notify("no device selected", severity="warning", timeout=4)
        return name
