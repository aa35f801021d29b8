"""A bar of tab labels drawn as one widget, wrapping onto a second line when narrow.

Textual's ``Tabs`` is a widget per tab plus four containers and an underline; this bar is one
widget, and Textual's paint cost follows the number of widgets on screen. Each label shows
the key that opens its tab before its name (``p Processes``); the labels wrap onto as many
lines as the width needs, so every tab stays on screen and readable: at 120x36 the side
panel's 41 columns take its eight tabs in two lines, at 80x24 the panel view takes them in
one.

The bar shows which tab is active (:attr:`TabBar.active`) and says when one is picked, with
the mouse or with the arrows while the bar has focus (:class:`TabBar.Picked`); its owner shows
that tab and sets :attr:`TabBar.active`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget


class BarTab(NamedTuple):
    """One tab of a bar."""

    id: str
    """The tab's id (what :attr:`TabBar.active` holds)."""
    label: str
    """Its name."""
    key: str = ""
    """The key that opens it from anywhere, shown before the name ("" for none)."""

    @property
    def text(self) -> str:
        """The label as shown, a cell of room on each side."""
        return f" {self.key} {self.label} " if self.key else f" {self.label} "


def wrap(tabs: Sequence[BarTab], width: int) -> list[list[tuple[int, BarTab]]]:
    """The tabs in lines of at most ``width`` cells, side by side (each label has a cell of
    room on each side): (column, tab) each. A label wider than the line gets a line of its
    own (cut at the edge)."""
    lines: list[list[tuple[int, BarTab]]] = [[]]
    x = 0
    for tab in tabs:
        n = len(tab.text)
        if lines[-1] and x + n > width:
            lines.append([])
            x = 0
        lines[-1].append((x, tab))
        x += n
    return lines


class TabBar(Widget, can_focus=True):
    """Tab labels, the active one highlighted; picked with the mouse or the arrows."""

    DEFAULT_CSS = """
    TabBar { height: auto; }
    TabBar > .tab-bar--active { text-style: bold reverse; }
    TabBar > .tab-bar--key { text-style: bold; }
    """

    COMPONENT_CLASSES = {"tab-bar--active", "tab-bar--key"}

    BINDINGS = [
        Binding("left", "step(-1)", "Previous tab", show=False),
        Binding("right", "step(1)", "Next tab", show=False),
    ]

    active: reactive[str] = reactive("", init=False)
    """The id of the tab shown."""

    class Picked(Message):
        """A tab was picked (a click, an arrow key): its owner shows it."""

        def __init__(self, bar: TabBar, tab_id: str) -> None:
            super().__init__()
            self.bar = bar
            self.tab_id = tab_id

        @property
        def control(self) -> TabBar:
            return self.bar

    def __init__(self, tabs: Sequence[BarTab], active: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tabs = tuple(tabs)
        """The tabs, in the bar's order."""
        self.set_reactive(TabBar.active, active or self.tabs[0].id)

    def watch_active(self) -> None:
        self.refresh()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        del container, viewport  # the labels' lines at this width say it all
        return len(wrap(self.tabs, width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = wrap(self.tabs, width)
        base = self.rich_style
        if y >= len(lines):
            return Strip.blank(width, base)
        active = self.get_component_rich_style("tab-bar--active", partial=True)
        key_style = self.get_component_rich_style("tab-bar--key", partial=True)
        segments: list[Segment] = []
        x = 0
        for at, tab in lines[y]:
            if at > x:
                segments.append(Segment(" " * (at - x), base))
            shown = tab.id == self.active
            style = base + active if shown else base
            if tab.key:  # the key in its colour, but on the active tab in the tab's own
                segments += [
                    Segment(" ", style),
                    Segment(tab.key, style if shown else style + key_style),
                    Segment(f" {tab.label} ", style),
                ]
            else:
                segments.append(Segment(tab.text, style))
            x = at + len(tab.text)
        return Strip(segments).crop_extend(0, width, base)

    def tab_at(self, x: int, y: int) -> BarTab | None:
        """The tab whose label is at cell (``x``, ``y``), if any."""
        lines = wrap(self.tabs, self.size.width)
        if not 0 <= y < len(lines):
            return None
        return next((tab for at, tab in lines[y] if at <= x < at + len(tab.text)), None)

    def on_click(self, event: events.Click) -> None:
        tab = self.tab_at(event.x, event.y)
        if tab is not None:
            self.post_message(self.Picked(self, tab.id))

    def action_step(self, step: int) -> None:
        """Pick the tab ``step`` places on (round the ends)."""
        ids = [tab.id for tab in self.tabs]
        at = ids.index(self.active) if self.active in ids else 0
        self.post_message(self.Picked(self, ids[(at + step) % len(ids)]))
