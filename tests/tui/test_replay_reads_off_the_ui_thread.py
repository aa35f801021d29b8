"""A replay looks frames up on a worker thread when its timeline's reads can be slow (a
recording decodes chunks of up to 64 MiB): ``q`` is answered while a lookup is still
reading, and a scrub asked for meanwhile supersedes it (the steps add up)."""

from __future__ import annotations

import threading

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.replay import make_replay_app
from tests.support.wait import holds_within
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, wait_for
from tests.tui.history_frames import fill, varying_frames

FIRST = 1_795_000_000.0


class SlowRecording(FrameStore):
    """Frames in memory whose forward steps (the scrub's) read slowly once :attr:`slow` is
    set, until released. The verdict's look back (``n = -1``) stays fast: its frames are
    within the window read with the frame shown, which a recording keeps decoded."""

    slow_reads = True

    def __init__(self) -> None:
        super().__init__(minutes=5, interval=1.0)
        self.slow = False
        self.reading = threading.Event()
        self.release = threading.Event()
        self.finished: list[int] = []
        """The steps (``n``) that finished a slow read."""

    def step(self, wall: float, n: int) -> Frame | None:
        if self.slow and n > 0:
            self.reading.set()
            self.release.wait(15.0)  # a chunk being decoded
            self.finished.append(n)
        return super().step(wall, n)


def replay() -> tuple[SlowRecording, list[Frame]]:
    frames = varying_frames(60, FIRST)
    timeline = SlowRecording()
    fill(timeline, frames)
    return timeline, frames


async def test_q_quits_while_a_chunk_is_still_being_read() -> None:
    timeline, frames = replay()
    app = make_replay_app(HOST_ROOTS, timeline, frames[10].wall_time)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[10])
            await parts_up(pilot, app)
            timeline.slow = True
            await pilot.press("right_square_bracket")
            assert holds_within(timeline.reading.is_set, 10.0), "the step never read"
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, "the app quitting")
        assert timeline.finished == []  # quit while the read was still going on
        assert app.main_screen.shown_frame == frames[10]
    finally:
        timeline.release.set()


async def test_a_scrub_while_a_read_is_in_flight_supersedes_it() -> None:
    timeline, frames = replay()
    app = make_replay_app(HOST_ROOTS, timeline, frames[10].wall_time)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[10])
            await parts_up(pilot, app)
            timeline.slow = True
            await pilot.press("right_square_bracket")
            assert holds_within(timeline.reading.is_set, 10.0), "the step never read"
            await pilot.press("right_square_bracket")  # answered while the first one reads
            assert app.main_screen.shown_frame == frames[10]
            timeline.release.set()
            await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[12], "frame 12")
            # The first read's result was dropped; the second read once, for both steps.
            assert timeline.finished == [1, 2]
            await pilot.pause()
            assert app.main_screen.shown_frame == frames[12]
    finally:
        timeline.release.set()
