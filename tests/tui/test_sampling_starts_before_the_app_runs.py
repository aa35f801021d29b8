"""#25, first figures: ``run_tui`` starts the sampler thread before the app runs, so the
second frame (the first with rates) is read while Textual starts, not after. What the thread
posts before the main screen is mounted, frames and problems alike, waits in ``EarlyFrames``
(the app may not be running yet) and comes out in order when the screen takes it."""

from __future__ import annotations

from textual.message import Message

from iotop_plus.config import Config
from iotop_plus.sampling.frame import LiveSource
from iotop_plus.tui.messages import FrameReady, SamplerProblem
from iotop_plus.tui.screens.early_frames import EarlyFrames
from tests.support.frames import StepClock
from tests.support.wait import holds_within
from tests.tui.canned import HOST_ROOTS, CannedSampler, canned_app
from tests.tui.helpers import started


def test_problems_wait_with_the_frames_until_the_screen_takes_them() -> None:
    source = LiveSource(HOST_ROOTS, CannedSampler())
    first, second = source.next_frame(), source.next_frame()
    early = EarlyFrames()
    posted: list[Message] = []
    post = early.hold(lambda m: posted.append(m))
    post(FrameReady(first))
    post(SamplerProblem("3 bad line(s) in diskstats"))
    post(FrameReady(second))
    assert posted == [] and early.held == 2  # nothing reaches an app that may not run yet
    taken: list[object] = []
    early.release(taken.append)
    assert taken == [first, second]
    assert [m.text for m in posted if isinstance(m, SamplerProblem)] == [
        "3 bad line(s) in diskstats"
    ]
    post(SamplerProblem("later"))  # once released, everything goes straight through
    assert isinstance(posted[-1], SamplerProblem) and posted[-1].text == "later"


async def test_a_sampler_started_before_run_is_not_started_again_and_paints_its_frames(
    step_clock: StepClock,
) -> None:
    app = canned_app(Config(interval=1))
    app.start_sampling()
    thread = app.sampler_thread
    assert thread is not None and thread.is_alive()
    holds_within(lambda: app.main_screen.early.held >= 1, 5.0)  # read before the app runs
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        assert app.sampler_thread is thread  # on_mount did not start another
        assert app.main_screen.frames_seen >= 1
    assert not thread.is_alive()  # stopped with the app
