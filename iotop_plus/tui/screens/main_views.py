"""The main screen's views: the table, the charts and the side panel, at once or one at a time.

Wide terminals show the table over the charts, with the side panel on the right (from
:data:`WIDE_WIDTH` columns it takes a share of the width, not its 42 columns). Narrow ones
(80x24 over SSH) show one of them at a time, chosen with the view tabs or the keys 1, 2, 3.
The screen's CSS classes say which: ``narrow``, ``wide`` and the view shown (``app.tcss``).

:class:`ScreenViews` is a collaborator the main screen owns; it is given the screen as a
Textual :class:`~textual.screen.Screen` (its classes, its widgets, its focus) and nothing of
the main screen's own.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import TabbedContent, Tabs

from iotop_plus.tui.widgets.device_table import DeviceTable

NARROW_WIDTH = 110
"""Below this many columns the table, charts and panel become tabs of their own."""
NARROW_HEIGHT = 30
"""Below this many lines, too."""
WIDE_WIDTH = 150
"""From this width the side panel takes a share of it, not its 42 columns."""

VIEWS = ("view-table", "view-charts", "view-panel")
"""The views narrow mode shows one of (the view tabs' ids, and the screen's class)."""


class ScreenViews:
    """Which views the screen shows, for its size; in narrow mode, which one.

    Args:
        screen: The main screen: the classes are set on it, the view tabs are its widgets.
    """

    def __init__(self, screen: Screen[Any]) -> None:
        self.screen = screen

    def fit(self, width: int, height: int) -> None:
        """The screen is ``width`` x ``height``: narrow, wide, or neither."""
        self.screen.set_class(width < NARROW_WIDTH or height < NARROW_HEIGHT, "narrow")
        self.screen.set_class(width >= WIDE_WIDTH, "wide")  # the side panel takes a share

    @property
    def narrow(self) -> bool:
        """Whether one view at a time is shown."""
        return self.screen.has_class("narrow")

    @property
    def view(self) -> str:
        """The view shown in narrow mode."""
        return next((v for v in VIEWS if self.screen.has_class(v)), "view-table")

    def show(self, view: str) -> None:
        """In narrow mode, show one of: the table, the charts, the side panel."""
        screen = self.screen
        for v in VIEWS:
            screen.set_class(v == view, v)
        tabs = screen.query_one("#view-tabs", Tabs)
        if tabs.active != view:
            tabs.active = view
        # At once (focus() waits a turn; "/" focuses the filter box next). Charts: no focus,
        # else a shown filter box took it and the keys typed next, q included, as filter text.
        if view == "view-table":
            screen.set_focus(screen.query_one(DeviceTable))
        elif view == "view-panel":
            for side in screen.query("#side-panel").results(TabbedContent):  # once mounted
                screen.set_focus(side.query_one(Tabs))
        else:
            screen.set_focus(None)
