"""The cursor and paging shared by the virtualised lists (device table, processes, cgroups).

A :class:`CursorList` is a Line-API ``ScrollView``: a few fixed header lines, then one line per
row. It owns the cursor (the row index), the keys that move it (up/down, page, home/end, a
click) and scrolling the cursor into view; a subclass renders the lines and says what a new
cursor position means (:meth:`CursorList.cursor_moved`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import ClassVar, Generic, TypeVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from iotop_plus.tui.widgets.plain_lines import plain_lines
from iotop_plus.tui.widgets.style_memo import StyleMemo

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


class CursorList(StyleMemo, ScrollView, Generic[RowT], can_focus=True):
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

    def render_lines(self, crop: Region) -> list[Strip]:
        """The rows' own strips where the list's styles add nothing (:mod:`.plain_lines`),
        else through Textual's styles cache: the table repaints rows every frame. A list
        already removed (its styles gone) that a last full update still paints is blank."""
        if not self.is_attached:
            return [Strip.blank(crop.width)] * crop.height
        lines = plain_lines(self, crop, self.size.width, self.render_line)
        return super().render_lines(crop) if lines is None else lines

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


class SortedList(CursorList[RowT]):
    """A cursor list of rows sorted by a figure, busiest first, under one header line: the
    Processes and Cgroups lists.

    Each tick brings new rows in their sort order. The cursor stays on the top row, whoever
    is busiest now, unless the user moved it onto another row: then it follows that row (by
    :meth:`row_key`) wherever it sorts, until it is gone or the user goes back to the top.
    A subclass says how a row is keyed and written (:meth:`row_key`, :meth:`row_text`,
    :meth:`header_text`) and names its component classes.
    """

    CURSOR_COMPONENT: ClassVar[str]
    """The component class of the cursor's line (listed in the subclass's COMPONENT_CLASSES)."""
    HEADER_COMPONENT: ClassVar[str]
    """The component class of the header line."""

    BINDINGS = [
        *cursor_bindings(),
        # ScrollView binds left/right to horizontal scrolling; here they change the sort.
        Binding("left", "sort(-1)", "Sort <", show=False),
        Binding("right", "sort(1)", "Sort >", show=False),
    ]

    def __init__(
        self,
        *,
        sort: Callable[[int], object] | None = None,
        moved: Callable[[], object] | None = None,
        id: str | None = None,
    ) -> None:
        """``sort(step)``: the panel around the list re-sorts its rows (left, right);
        ``moved()``: the panel follows the cursor (both owned by the panel)."""
        super().__init__(id=id)
        self._resort = sort
        self._follow_cursor = moved
        self.selected: Hashable | None = None
        """Key of the row under the cursor."""
        self.following = False
        """The user moved the cursor off the top row: it follows that row."""
        self.sort = "total"
        self.descending = True

    def row_key(self, row: RowT) -> Hashable:
        """What identifies a row from one tick to the next."""
        raise NotImplementedError

    def row_text(self, row: RowT, width: int) -> str:
        """One row's line, ``width`` characters at most."""
        raise NotImplementedError

    def header_text(self, width: int) -> str:
        """The column titles, with an arrow on the sorted one(s)."""
        raise NotImplementedError

    def sort_title(self, key: str, title: str) -> str:
        """``title`` with the order's arrow when the list is sorted by column ``key`` (a sort by
        "total" marks both the read and the write column)."""
        here = self.sort == key or (self.sort == "total" and key in ("read", "write"))
        return f"{title}{'▼' if self.descending else '▲'}" if here else title

    def set_rows(self, rows: list[RowT]) -> None:
        """Show ``rows`` in their sort order (see the class docstring for the cursor)."""
        self.rows = rows
        index = None
        if self.following:
            index = next((i for i, r in enumerate(rows) if self.row_key(r) == self.selected), None)
        if index is None:
            self.following = False
            self.cursor = 0
            self.selected = self.row_key(rows[0]) if rows else None
        else:
            self.cursor = index
        self.fit_virtual_size()
        self.scroll_cursor_into_view()
        self.refresh()

    @property
    def current(self) -> RowT | None:
        """The row under the cursor."""
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            style = self.component_style(self.HEADER_COMPONENT)
            return Strip([Segment(self.header_text(width), style)]).crop_extend(0, width, style)
        index = y - 1 + self.scroll_offset.y
        if index >= len(self.rows):
            return Strip.blank(width)
        style = self.component_style(self.CURSOR_COMPONENT) if index == self.cursor else Style()
        text = self.row_text(self.rows[index], width)
        return Strip([Segment(text, style)]).crop_extend(0, width, style)

    def cursor_moved(self, _old: int) -> None:
        self.selected = self.row_key(self.rows[self.cursor])
        self.following = self.cursor != 0  # back on the top row: stay on top again
        self.refresh()
        if self._follow_cursor is not None:
            self._follow_cursor()

    def action_sort(self, step: int) -> None:
        """The panel around the list owns the sort (it re-arranges the rows)."""
        if self._resort is not None:
            self._resort(step)

    def on_resize(self) -> None:
        self.fit_virtual_size()
