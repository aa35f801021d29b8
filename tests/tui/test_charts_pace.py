"""Charts keep the table's pace: one draw per frame while visible, none while hidden or
paused; ``chart_refresh_s`` is gone from the config and says why."""

from __future__ import annotations

from iotop_plus.config import Config, config_from_mapping
from iotop_plus.tui.widgets.charts import DeviceCharts
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step, wait_for


async def test_charts_draw_once_per_frame_at_the_tables_pace(step_clock: StepClock) -> None:
    app = canned_app(Config(interval=0.25))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        charts = app.main_screen.query_one(DeviceCharts)
        draws = charts.draws
        await step(pilot, app, 4)
        # (the old default drew every 5 s: no draw at all in one second of frames)
        await wait_for(pilot, lambda: charts.draws >= draws + 3, "a draw per frame")
        await pilot.press("space")
        draws = charts.draws
        await step(pilot, app, 3)
        assert charts.draws == draws  # paused: frames feed the history, nothing is drawn


def test_chart_refresh_s_is_retired_with_a_reason() -> None:
    problems: list[str] = []
    config = config_from_mapping({"chart_refresh_s": 5.0, "interval": 2}, problems)
    assert config.interval == 2
    assert problems == [
        "config: 'chart_refresh_s' ignored: charts now follow the refresh interval "
        "(every frame, when visible)"
    ]
