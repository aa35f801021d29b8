"""The main screen's views: the table, the charts and the side panel, at once or one at a time.

Wide terminals show the table over the charts, with the side panel on the right (from
:data:`WIDE_WIDTH` columns it takes a share of the width, not its 42 columns). Narrow ones
(80x24 over SSH) show one of them at a time, chosen with the view tabs or the keys 1, 2, 3.
The screen's CSS classes say which: ``narrow``, ``wide`` and the view shown (``app.tcss``).

:class:`ScreenViews` is a collaborator the main screen owns; it is given the screen as a
Textual :class:`~textual.screen.Screen` (its classes, its widgets, its focus) and nothing of
the main screen's own. :func:`first_widgets` is what the screen composes: the views of the
first paint.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget

from iotop_plus.config import Config
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.key_hints import KeyHints
from iotop_plus.tui.widgets.pressure import PressureGauge
from iotop_plus.tui.widgets.tab_bar import BarTab, TabBar

NARROW_WIDTH = 110
"""Below this many columns the table, charts and panel become tabs of their own."""
NARROW_HEIGHT = 30
"""Below this many lines, too."""
WIDE_WIDTH = 150
"""From this width the side panel takes a share of it, not its 42 columns."""

VIEWS = ("view-table", "view-charts", "view-panel")
"""The views narrow mode shows one of (the view tabs' ids, and the screen's class)."""

VIEW_TABS = (
    BarTab("view-table", "Devices", "1"),
    BarTab("view-charts", "Charts", "2"),
    BarTab("view-panel", "Panel", "3"),
)
"""The view tabs, with their keys."""


def first_widgets(
    host: HostInfo,
    config: Config,
    interval: float,
    zone: tzinfo | None,
    devices: Sequence[str],
    view_tabs: TabBar | None,
) -> list[Widget]:
    """What the main screen composes: the header, the view tabs (``view_tabs``: only while
    narrow), the device table, and the key hints. The filter box and the latency view come
    when first shown (:mod:`~iotop_plus.tui.screens.main_table`); the charts under the table
    and the side panel beside it just after the first paint
    (:mod:`~iotop_plus.tui.screens.later_parts`)."""
    header = HostHeader(host, interval, zone=zone, id="header", read_only=config.read_only)
    return [
        Horizontal(header, PressureGauge(id="pressure"), id="header-row"),
        *(() if view_tabs is None else (view_tabs,)),
        Horizontal(Vertical(DeviceTable(config, only=devices, id="table"), id="left"), id="body"),
        KeyHints(),
    ]


class ScreenViews:
    """Which views the screen shows, for its size; in narrow mode, which one.

    Args:
        screen: The main screen: the classes are set on it, the view tabs are its widgets.
    """

    def __init__(self, screen: Screen[Any]) -> None:
        self.screen = screen

    @property
    def narrow(self) -> bool:
        """Whether one view at a time is shown."""
        return self.screen.has_class("narrow")

    def fit(self, width: int, height: int) -> None:
        """The screen is ``width`` x ``height``: narrow, wide, or neither."""
        self.screen.set_class(width < NARROW_WIDTH or height < NARROW_HEIGHT, "narrow")
        self.screen.set_class(width >= WIDE_WIDTH, "wide")  # the side panel takes a share

    def bar(self) -> TabBar | None:
        """The view tabs, when they are mounted (narrow)."""
        try:
            return self.screen.query_one("#view-tabs", TabBar)
        except NoMatches:
            return None

    def new_bar(self) -> TabBar:
        """The view tabs, the view shown active."""
        return TabBar(VIEW_TABS, self.view, id="view-tabs")

    def place_bar(self) -> None:
        """Mount the view tabs over the body when the screen is narrow, remove them when not."""
        bar = self.bar()
        if self.narrow and bar is None:
            self.screen.mount(self.new_bar(), before="#body")
        elif not self.narrow and bar is not None:
            bar.remove()

    @property
    def view(self) -> str:
        """The view shown in narrow mode."""
        return next((v for v in VIEWS if self.screen.has_class(v)), "view-table")

    def show(self, view: str) -> None:
        """In narrow mode, show one of: the table, the charts, the side panel."""
        screen = self.screen
        for v in VIEWS:
            screen.set_class(v == view, v)
        bar = self.bar()
        if bar is not None:
            bar.active = view
        # At once (focus() waits a turn; "/" focuses the filter box next). Charts: no focus,
        # else a shown filter box took it and the keys typed next, q included, as filter text.
        if view == "view-table":
            screen.set_focus(screen.query_one(DeviceTable))
        elif view == "view-panel":
            for side_tabs in screen.query("#side-tabs").results(TabBar):  # once mounted
                screen.set_focus(side_tabs)
        else:
            screen.set_focus(None)
