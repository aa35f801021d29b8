"""The cursor and paging shared by the virtualised lists (the device table, the process list).

A :class:`CursorList` is a Line-API ``ScrollView``: a few fixed header lines, then one line per
row. It owns the cursor (the row index), the keys that move it (up/down, page, home/end, a
click) and scrolling the cursor into view; a subclass renders the lines and says what a new
cursor position means (:meth:`CursorList.cursor_moved`).
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView

RowT = TypeVar("RowT")


def cursor_bindings(tooltip: str = "") -> list[BindingType]:
    """Up/down, page up/down and home/end, hidden from the footer; ``tooltip`` for the help."""
    return [
        Binding("up", "cursor(-1)", "Up", show=False, tooltip=tooltip),
        Binding("down", "cursor(1)", "Down", show=False, tooltip=tooltip),
        Binding("pageup", "page(-1)", "Page up", show=False, tooltip=tooltip),
        Binding("pagedown", "page(1)", "Page down", show=False, tooltip=tooltip),
        Binding("home", "edge(-1)", "First", show=False, tooltip=tooltip),
        Binding("end", "edge(1)", "Last", show=False, tooltip=tooltip),
    ]


class CursorList(ScrollView, Generic[RowT], can_focus=True):
    """Rows under ``HEADER_LINES`` fixed lines, with a cursor the keys move."""

    HEADER_LINES: ClassVar[int] = 1
    """Lines above the rows that do not scroll (column titles, units)."""

    BINDINGS = cursor_bindings()

    # Rows are cut to the width, never scrolled sideways. Without this, the vertical scrollbar
    # narrowed the rows, a horizontal scrollbar appeared and covered the last line (End
    # landed under it).
    DEFAULT_CSS = """
    CursorList { overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[RowT] = []
        """The rows in display order."""
        self.cursor = 0
        """Index of the row under the cursor."""

    @property
    def page_rows(self) -> int:
        """Rows that fit under the header (a scrollbar's line not counted)."""
        return max(self.scrollable_content_region.height - self.HEADER_LINES, 1)

    def fit_virtual_size(self) -> None:
        """Make the scrollable area as tall as the header and the rows."""
        self.virtual_size = Size(self.size.width, len(self.rows) + self.HEADER_LINES)

    def scroll_cursor_into_view(self) -> None:
        """Scroll (at once) so the cursor's row is on screen."""
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + self.page_rows:
            self.scroll_to(y=self.cursor - self.page_rows + 1, animate=False, immediate=True)

    def refresh_rows(self, *indexes: int) -> None:
        """Repaint the lines of the rows ``indexes`` that are on screen."""
        top = self.scroll_offset.y
        for i in indexes:
            if top <= i < top + self.page_rows:
                self.refresh(Region(0, i - top + self.HEADER_LINES, self.size.width, 1))

    def move_cursor(self, index: int) -> None:
        """Put the cursor on row ``index`` (clamped) and scroll it into view."""
        if not self.rows:
            return
        old = self.cursor
        self.cursor = max(0, min(index, len(self.rows) - 1))
        self.scroll_cursor_into_view()
        self.cursor_moved(old)

    def cursor_moved(self, old: int) -> None:
        """The cursor went from row ``old`` to ``self.cursor``: repaint both (subclasses add)."""
        self.refresh_rows(old, self.cursor)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor + step * self.page_rows)

    def action_edge(self, step: int) -> None:
        self.move_cursor(0 if step < 0 else len(self.rows) - 1)
