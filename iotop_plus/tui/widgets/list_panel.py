"""What the Processes and Cgroups panels share: a status line, a filter box, a sorted list and
a detail box under it, fed by the main screen's frames while the panel is shown.

A subclass names its widgets (:attr:`ListPanel.FILTER_ID`, :attr:`ListPanel.DETAIL_ID`), its
sort keys and how it asks the feed for its part of the frame and for the selected row's detail
(:meth:`ListPanel.feed_wants`, :meth:`ListPanel.feed_detail`); the base owns showing and hiding,
the sort and filter keys, the detail toggle and ``escape``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from textual.containers import Vertical
from textual.widgets import Input, Static

from iotop_plus.tui.widgets.cursor_list import SortedList
from iotop_plus.tui.widgets.while_shown import WhileShown


class ListPanel(WhileShown, Vertical, can_focus=False):
    """A panel around a :class:`SortedList`, with a filter box and a detail box."""

    FILTER_ID: ClassVar[str]
    """The filter :class:`Input`'s id."""
    DETAIL_ID: ClassVar[str]
    """The detail :class:`Static`'s id (shown with the ``shown`` class)."""
    SORT_KEYS: ClassVar[Sequence[str]]
    """The sort columns, in the order left/right steps through them."""
    ASCENDING_KEYS: ClassVar[frozenset[str]]
    """Sort keys that start A-Z (names); the others start biggest first."""

    def __init__(self, feed: Any, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.feed = feed
        """What supplies the frames (the main screen's feed); None shows nothing."""
        self.only_active = False
        self.filter_text = ""

    # -- what a subclass says ----------------------------------------------------------------

    @property
    def sorted_list(self) -> SortedList[Any]:
        """The list widget."""
        raise NotImplementedError

    @property
    def detail_key(self) -> Hashable | None:
        """What the detail box shows (a pid, a cgroup path), or None."""
        raise NotImplementedError

    def row_detail_key(self, row: Any) -> Hashable:
        """The detail key of a list row."""
        raise NotImplementedError

    def feed_wants(self, on: bool) -> None:
        """Ask the feed for this panel's part of the frames (or no longer)."""
        raise NotImplementedError

    def feed_detail(self, key: Any) -> None:
        """Ask the feed for the detail of ``key`` (None: none)."""
        raise NotImplementedError

    def set_detail(self, key: Any) -> None:
        """Remember ``key`` as the detailed row and ask the feed for it."""
        raise NotImplementedError

    def render_detail(self) -> None:
        """Redraw the detail box."""
        raise NotImplementedError

    def rerender(self) -> None:
        """Redraw the rows and the status after the view (sort, filter, modes) changed."""
        raise NotImplementedError

    def close_rest(self) -> None:
        """``escape`` with neither the detail nor the filter shown."""

    # -- frames from the feed ----------------------------------------------------------------

    def can_want(self) -> bool:
        return self.feed is not None

    def shown_changed(self, on: bool) -> None:
        self.feed_wants(on)
        if on:
            self.feed_detail(self.detail_key)

    # -- keys --------------------------------------------------------------------------------

    def action_toggle_only_active(self) -> None:
        """Only rows doing I/O now, or all."""
        self.only_active = not self.only_active
        self.rerender()

    def action_sort(self, step: int) -> None:
        """Sort by the next (1) or previous (-1) column."""
        plist = self.sorted_list
        keys = self.SORT_KEYS
        plist.sort = keys[(keys.index(plist.sort) + step) % len(keys)]
        plist.descending = plist.sort not in self.ASCENDING_KEYS
        self.rerender()

    def action_invert_sort(self) -> None:
        """Reverse the sort order."""
        self.sorted_list.descending = not self.sorted_list.descending
        self.rerender()

    def action_filter(self) -> None:
        """Open the filter box."""
        box = self.query_one(f"#{self.FILTER_ID}", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == self.FILTER_ID:
            event.stop()
            self.filter_text = event.value.strip()
            self.rerender()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == self.FILTER_ID:
            event.stop()
            self.sorted_list.focus()

    def toggle_detail(self) -> None:
        """Show the selected row's detail (again, or no row: hide it)."""
        row = self.sorted_list.current
        box = self.query_one(f"#{self.DETAIL_ID}", Static)
        if row is None or (self.detail_key == self.row_detail_key(row) and box.has_class("shown")):
            self.set_detail(None)
            box.remove_class("shown")
            return
        self.set_detail(self.row_detail_key(row))
        box.add_class("shown")
        self.render_detail()

    def action_close(self) -> None:
        """Clear the filter while typing in it, else hide the detail, else the filter."""
        box = self.query_one(f"#{self.FILTER_ID}", Input)
        detail = self.query_one(f"#{self.DETAIL_ID}", Static)
        if detail.has_class("shown") and not box.has_focus:
            self.set_detail(None)
            detail.remove_class("shown")
            return
        if box.has_class("shown"):
            box.value = ""
            box.remove_class("shown")
            self.filter_text = ""
            self.sorted_list.focus()
            self.rerender()
            return
        self.close_rest()
