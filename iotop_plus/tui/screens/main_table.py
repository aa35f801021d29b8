"""The main screen's device-table keys: the name filter, all devices, column sets, sorting.

A mixin of :class:`~iotop_plus.tui.screens.main.MainScreen` (the filter box's ``Changed``
handler stays there: Textual collects ``@on`` handlers from the screen class itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.widgets import Input

from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.latency_view import LatencyView
from iotop_plus.tui.widgets.table_columns import LATENCY_SET

if TYPE_CHECKING:
    from iotop_plus.tui.screens.main import MainScreen


class TableActions:
    """The device-table actions of the main screen (mixed into it)."""

    @property
    def _main(self) -> MainScreen:
        return cast("MainScreen", self)

    def action_filter(self) -> None:
        """Show the name filter and focus it."""
        if self._main.narrow:
            self._main.action_view("view-table")
        box = self._main.query_one("#filter", Input)
        box.add_class("shown")
        # At once, not box.focus() (which waits a turn of the message queue): the name typed
        # right after "/" may already be queued, and would go to the table's keys.
        self._main.set_focus(box)

    def action_clear_filter(self) -> None:
        """Drop the filter."""
        box = self._main.query_one("#filter", Input)
        box.value = ""
        box.remove_class("shown")
        self._main.query_one(DeviceTable).set_filter("")
        self._main.query_one(DeviceTable).focus()

    def finish_filter(self, value: str) -> None:
        """Enter in the filter, handled in turn with the keys typed before it (see
        :class:`FilterInput`): apply the box's text, then select the device named exactly,
        else the first match in the current sort order, else nothing."""
        box = self._main.query_one("#filter", Input)
        text = value.strip()
        if not text:
            box.remove_class("shown")
        table = self._main.query_one(DeviceTable)
        table.pick(text)
        # At once, not when the table's DeviceSelected arrives: a key typed right after
        # Enter (R, S, d, X in the same burst) must act on this device.
        self._main.select_device(table.selected)
        self._main.set_focus(table)  # at once: the key typed next is the table's

    def action_toggle_all(self) -> None:
        """Switch between the default device selection and all devices."""
        table = self._main.query_one(DeviceTable)
        table.toggle_all()
        self._main.notify(
            "showing all devices" if table.show_all else "showing used whole disks",
            timeout=2,
        )

    def action_cycle_columns(self) -> None:
        """Next column set."""
        name = self._main.query_one(DeviceTable).cycle_columns()
        self._main.notify(f"columns: {name}", timeout=2)
        self.show_latency_view(name == LATENCY_SET)

    def show_latency_view(self, on: bool) -> None:
        """Show (or hide) the latency view; the tracer runs only while it is shown."""
        view = self._main.query_one(LatencyView)
        if view.display == on:
            return
        view.display = on
        self._main.feed.want_latency(on)
        if on:
            view.show_latency(
                None if self._main.shown_frame is None else self._main.shown_frame.latency,
                self._main.selected_device,
            )

    def action_sort(self, step: int) -> None:
        """Sort by the previous or next column."""
        title = self._main.query_one(DeviceTable).move_sort(step)
        self._main.notify(f"sorted by {title}", timeout=2)

    def action_reverse_sort(self) -> None:
        """Reverse the sort order."""
        self._main.query_one(DeviceTable).reverse_sort()
