"""Pilot tests step the app's clock by hand (tests/support/frames.py): a frame comes when
the test asks for it, exactly as many as asked, whatever the interval and the load."""

from __future__ import annotations

import pytest

from iotop_plus.config import Config
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step


async def test_a_stepped_app_gets_exactly_the_frames_asked_for(step_clock: StepClock) -> None:
    app = canned_app(Config(interval=0.25))  # the real clock would bring four a second
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        thread = app.sampler_thread
        assert thread is not None and thread.schedule.clock is step_clock
        assert (app.frames_received, thread.frames) == (2, 2)
        await step(pilot, app, 3)
        assert (app.frames_received, thread.frames) == (5, 5)
        # The clock moved one interval per frame after the short first one.
        assert step_clock.now() == pytest.approx(0.1 + 3 * 0.25)
