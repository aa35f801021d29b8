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

from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import Any

from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Tab, TabbedContent, Tabs

from iotop_plus.config import Config
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.filter_input import FilterInput
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.key_hints import KeyHints
from iotop_plus.tui.widgets.latency_view import LatencyView
from iotop_plus.tui.widgets.pressure import PressureGauge

NARROW_WIDTH = 110
"""Below this many columns the table, charts and panel become tabs of their own."""
NARROW_HEIGHT = 30
"""Below this many lines, too."""
WIDE_WIDTH = 150
"""From this width the side panel takes a share of it, not its 42 columns."""

VIEWS = ("view-table", "view-charts", "view-panel")
"""The views narrow mode shows one of (the view tabs' ids, and the screen's class)."""


def first_widgets(
    host: HostInfo,
    config: Config,
    interval: float,
    zone: tzinfo | None,
    devices: Sequence[str],
    filter_done: Callable[[str], object],
    filter_clear: Callable[[], object],
) -> list[Widget]:
    """What the main screen composes: the header, the view tabs, the filter box, the device
    table and the latency view, and the key hints. The charts under the table and the side
    panel beside it come just after the first paint
    (:mod:`~iotop_plus.tui.screens.later_parts`)."""
    latency_view = LatencyView(id="latency-view")
    latency_view.display = False  # until the latency columns are shown
    header = HostHeader(host, interval, zone=zone, id="header", read_only=config.read_only)
    return [
        Horizontal(header, PressureGauge(id="pressure"), id="header-row"),
        Tabs(
            Tab("1 Devices", id="view-table"),
            Tab("2 Charts", id="view-charts"),
            Tab("3 Panel", id="view-panel"),
            id="view-tabs",
        ),
        Horizontal(
            Vertical(
                FilterInput(
                    done=filter_done,  # Enter in the filter box
                    clear=filter_clear,
                    placeholder="filter devices by name (Enter keeps, Esc clears)",
                    id="filter",
                ),
                DeviceTable(config, only=devices, id="table"),
                latency_view,
                id="left",
            ),
            id="body",
        ),
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
