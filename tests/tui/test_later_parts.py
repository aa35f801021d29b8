"""#25, first figures: the main screen's first paint is the header and the table; the charts
and the side panel are mounted right after it (:mod:`iotop_plus.tui.screens.later_parts`), and
keys typed before they are up act once they are."""

from __future__ import annotations

import pytest
from textual import events
from textual.screen import Screen

from iotop_plus.config import Config
from iotop_plus.tui.engine.testing import on_paint
from iotop_plus.tui.screens.later_parts import LaterParts
from iotop_plus.tui.screens.main import MainScreen
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.device_panel import DevicePanel
from iotop_plus.tui.widgets.side_panel import SidePanel
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for


async def test_the_first_paint_waits_for_no_chart_and_the_rest_follows_unasked(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    paints: list[tuple[int, int]] = []  # (charts, side panels) on screen at each paint

    def counting_paint(screen: Screen[object]) -> None:
        if isinstance(screen, MainScreen):
            paints.append((len(screen.query(DeviceCharts)), len(screen.query("#side-panel"))))

    on_paint(monkeypatch, counting_paint)
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        frames = app.frames_received
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.later.mounted, "the charts and the side panel")
        assert paints and paints[0] == (0, 0), paints
        # Mounted without another frame, and drawn with the frame on screen.
        assert app.frames_received == frames
        device_charts = screen.query_one(DeviceCharts)
        charts = list(device_charts.pictures.values())
        assert len(charts) == 5
        await wait_for(pilot, lambda: device_charts.device == screen.selected_device, "charts")
        assert device_charts.device is not None
        assert any(line.values for chart in charts for line in chart.lines)
        panel = screen.query_one(DevicePanel)
        assert panel.device is not None and "why" in panel.text


async def test_keys_typed_before_the_side_panel_is_up_act_once_it_is(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    due: list[LaterParts] = []

    def not_yet(self: LaterParts) -> None:
        due.append(self)  # the test mounts them, below

    monkeypatch.setattr(LaterParts, "after_first_paint", not_yet)
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.main_screen
        await started(pilot, app, parts=False)
        assert due == [screen.later] and not screen.query("#side-panel")
        # A fast "p" (the Processes tab) typed right after Enter, before the side panel exists.
        app.post_message(events.Key("p", "p"))
        await pilot.pause()
        assert app.return_code is None  # no crash on the missing panel
        await screen.later.mount()
        await wait_for(
            pilot,
            lambda: screen.query_one("#side-panel", SidePanel).active == "tab-processes",
            "the Processes tab",
        )


async def test_a_screen_closing_before_the_parts_come_gets_no_traceback(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGTERM just after the first paint: the app unmounted the screen while the parts were
    # due, and mounting them into it was a MountError traceback with exit status 1.
    monkeypatch.setattr(LaterParts, "after_first_paint", lambda self: None)
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app, parts=False)
        screen = app.main_screen
        await screen.query_one("#body").remove()  # as the app's shutdown does
        await screen.later.mount()
        await pilot.pause()
        assert not screen.later.mounted
        assert app.return_code is None  # no error: Textual sets 1 on one
