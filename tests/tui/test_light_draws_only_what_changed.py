"""#25: a frame redraws what changed and nothing more.

Once the screen has settled at a fixed size, frames change the header's clock, the charts and
the table's figures, but nothing changes size: no frame may ask for a layout pass (a reflow of
the whole screen, ~18 % of the TUI's busy time in the profile), and a widget whose text did not
change is not refreshed.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from textual.widget import Widget
from textual.widgets import Static

from iotop_plus.config import Config
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.header import HostHeader
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step

Call = tuple[str, str | None, bool]
"""(widget class, id, whether a layout pass was asked for)."""


@contextmanager
def refreshes(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[Call]]:
    """Count every widget refresh while the block runs."""
    calls: collections.Counter[Call] = collections.Counter()
    original = Widget.refresh

    def counting(self: Widget, *regions: object, **kwargs: bool) -> Widget:
        calls[(type(self).__name__, self.id, bool(kwargs.get("layout")))] += 1
        return original(self, *regions, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Widget, "refresh", counting)
    yield calls


async def test_steady_frames_ask_for_no_layout_pass(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = canned_app(Config(interval=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await step(pilot, app, 3)
        await pilot.pause()
        charts = app.main_screen.query_one(DeviceCharts)
        draws = charts.draws
        with refreshes(monkeypatch) as calls:
            await step(pilot, app, 5)
            await pilot.pause()
        assert charts.draws == draws + 5  # the charts did follow every frame
        assert calls[("HostHeader", "header", False)] >= 5  # and the clock moved
        assert [call for call in calls if call[2]] == []


async def test_a_widget_whose_text_did_not_change_is_not_refreshed(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = canned_app(Config(interval=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.pause()
        screen = app.main_screen
        caption = screen.query_one("#chart-caption", Static)
        header = screen.query_one(HostHeader)
        with refreshes(monkeypatch) as calls:
            screen.draw_charts(force=True)  # the same window again: the same caption
            header.show(note=header.note)  # the same header text
            await pilot.pause()
        assert calls[("Static", caption.id, False)] + calls[("Static", caption.id, True)] == 0
        assert calls[("HostHeader", "header", False)] + calls[("HostHeader", "header", True)] == 0
