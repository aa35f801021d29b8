"""The charts and the device table work their component styles out once, not at every frame
(Textual's own lookup walks every ancestor's styles and is forgotten at each repaint), and
again whenever Textual restyles them: a theme change gives the caption, the rule and the
cursor the new theme's colours at the next frame."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widget import Widget

from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.style_memo import StyleMemo
from tests.support.frames import StepClock
from tests.tui.helpers import step
from tests.tui.light_support import started_app

COMPONENTS = (
    (DeviceCharts, "device-charts--caption"),
    (DeviceCharts, "device-charts--rule"),
    (DeviceTable, "device-table--cursor"),
)


def _memo(widget: Widget) -> StyleMemo:
    assert isinstance(widget, StyleMemo)
    return widget


async def test_steady_frames_look_no_component_style_up_again(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with started_app(2) as (pilot, app):
        looked_up: list[str] = []
        real = Widget.get_component_rich_style

        def spy(self: Widget, *names: str, **kwargs: Any) -> Any:
            if isinstance(self, DeviceCharts | DeviceTable):
                looked_up.extend(names)
            return real(self, *names, **kwargs)

        monkeypatch.setattr(Widget, "get_component_rich_style", spy)
        charts = app.main_screen.query_one(DeviceCharts)
        draws = charts.draws
        await step(pilot, app, 3)
        await pilot.pause()
        assert charts.draws >= draws + 3  # the charts and the table were drawn again
        assert looked_up == []


async def test_a_theme_change_gives_the_new_component_styles(step_clock: StepClock) -> None:
    async with started_app(2) as (pilot, app):
        screen = app.main_screen
        before = {
            name: _memo(screen.query_one(kind)).component_style(name) for kind, name in COMPONENTS
        }
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        await step(pilot, app)
        await pilot.pause()
        for kind, name in COMPONENTS:
            widget = screen.query_one(kind)
            now = _memo(widget).component_style(name)
            assert now == widget.get_component_rich_style(name), name  # as Textual has it
            assert now != before[name], name  # and not the old theme's
