"""One clock for every view: ``space`` freezes the table, the charts' source, the header and
the Processes tab together, and ``+``/``-`` change the pace of all of them. Runs the real app
on this host's /proc and /sys (processes are our own and the system's)."""

from __future__ import annotations

import itertools

import pytest

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import PROCESSES
from iotop_plus.tui.app import make_app
from iotop_plus.tui.widgets.header import HostHeader
from tests.support.frames import step_until
from tests.tui.helpers import started, step, wait_for


async def test_space_freezes_the_processes_view_too() -> None:
    app = make_app(Roots(), Config(interval=0.25))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        panel = app.main_screen.panels.process_panel
        thread = app.sampler_thread
        assert thread is not None
        await step_until(
            pilot, thread, lambda: panel.last is not None and bool(panel.last.rates), "rates"
        )
        assert isinstance(app.source, LiveSource) and app.source.wants(PROCESSES)
        await pilot.press("space")
        assert (
            app.main_screen.shown.paused and "PAUSED" in app.main_screen.query_one(HostHeader).text
        )
        frozen_rows, frozen_table = panel.last, app.main_screen.shown_frame
        ticks = app.frames_received
        await step(pilot, app, 3)  # sampling goes on
        assert app.frames_received == ticks + 3
        assert panel.last is frozen_rows, "the Processes tab moved while paused"
        assert app.main_screen.shown_frame is frozen_table
        assert app.latest_frame is not None and app.latest_frame.processes is not None
        await pilot.press("space")
        assert not app.main_screen.shown.paused
        await step_until(pilot, thread, lambda: panel.last is not frozen_rows, "a new view")


@pytest.mark.slow  # seconds on the wall clock (the pace is what it tests)
@pytest.mark.real_clock("the pace of the views is measured in wall-clock gaps between frames")
async def test_plus_and_minus_set_the_pace_of_every_view() -> None:
    app = make_app(Roots(), Config(interval=1.0))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        panel = app.main_screen.panels.process_panel
        await wait_for(pilot, lambda: panel.last is not None)
        await pilot.press("plus", "plus")  # 1 s -> 0.5 -> 0.25
        assert app.main_screen.interval == 0.25
        assert app.sampler_thread is not None and app.sampler_thread.interval == 0.25
        assert "every 0.25s" in app.main_screen.query_one(HostHeader).text
        seen: list[float] = []

        def process_sample_times() -> bool:
            last = panel.last
            if last is not None and (not seen or last.sample.monotonic != seen[-1]):
                seen.append(last.sample.monotonic)
            return len(seen) >= 6

        await wait_for(pilot, process_sample_times, timeout=30)
        gaps = sorted(b - a for a, b in itertools.pairwise(seen))
        median = gaps[len(gaps) // 2]
        assert 0.2 <= median <= 0.45, f"the Processes tab is not at 0.25 s: {gaps}"
        await pilot.press("minus", "minus", "minus")  # 0.25 -> 0.5 -> 1 -> 2
        assert app.main_screen.interval == 2.0 and app.sampler_thread.interval == 2.0
        before = app.frames_received
        await pilot.pause(1.0)
        assert app.frames_received <= before + 1  # no longer every 0.25 s
