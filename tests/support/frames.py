"""Frames that come when the test says: a hand-stepped clock for the TUI's one schedule.

The app's :class:`~iotop_plus.sampling.clock.SamplerThread` takes its frames on a
:class:`~iotop_plus.sampling.clock.Schedule` that reads time from a ``Clock``. With a
:class:`StepClock` that time only moves when the test moves it, so a Pilot test gets exactly
the frames it asks for (:func:`next_frames`), whatever the machine's load, and never waits out
a real interval. The frames themselves are the product's own: the source is read for real
(fixture roots, a canned sampler); only *when* is the test's. A view asking for a frame at
once (``sample_now``) still gets it at once, as in the product.

Pilot tests take the ``step_clock`` fixture (tests/conftest.py); :func:`tests.tui.helpers.started`
then steps the first frames itself. Tests about the clock itself keep the real one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from iotop_plus.sampling.clock import SamplerThread
from tests.support.wait import wait_for

POLL_S = 0.005
"""How often a waiting sampler thread looks at its wake-up event (events cannot notify)."""


def on_clock(clock: StepClock) -> Callable[..., None]:
    """A ``SamplerThread.__init__`` that puts every thread started without a clock of its own
    on ``clock`` (the ``step_clock`` fixture's, and the in-process benchmarks')."""
    real_init = SamplerThread.__init__

    def init(self: SamplerThread, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("clock") is None:
            kwargs["clock"] = clock
        real_init(self, *args, **kwargs)

    return init


class StepClock:
    """A monotonic clock for :class:`~iotop_plus.sampling.clock.Schedule` that only moves
    when :meth:`advance` or :meth:`advance_to` is called. Starts at 0, before any frame's
    own (real) monotonic stamp, so a primed frame's time never moves the schedule."""

    def __init__(self) -> None:
        self._now = 0.0
        self._until: float | None = None
        self._moved = threading.Condition()

    def now(self) -> float:
        """The clock's time."""
        with self._moved:
            return self._now

    def wait(self, event: threading.Event | None, seconds: float) -> bool:
        """Block until the clock has moved ``seconds`` on, or ``event`` is set (True)."""
        with self._moved:
            until = self._until = self._now + seconds
            try:
                while self._now < until:
                    if event is not None and event.is_set():
                        return True
                    self._moved.wait(POLL_S)
            finally:
                self._until = None
        return event is not None and event.is_set()

    @property
    def waiting(self) -> bool:
        """Whether a thread waits on this clock now."""
        with self._moved:
            return self._until is not None

    def release_waiter(self) -> bool:
        """Move the clock to the time a thread waits for, if one waits; True if one did."""
        with self._moved:
            if self._until is None:
                return False
            self._now = max(self._now, self._until)
            self._moved.notify_all()
            return True

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` on."""
        with self._moved:
            self._now += seconds
            self._moved.notify_all()

    def advance_to(self, when: float) -> None:
        """Move the clock to ``when`` (never back)."""
        with self._moved:
            self._now = max(self._now, when)
            self._moved.notify_all()


def stepped(thread: SamplerThread | None) -> StepClock | None:
    """The thread's clock when it is a :class:`StepClock`, else None."""
    if thread is None:
        return None
    clock = thread.schedule.clock
    return clock if isinstance(clock, StepClock) else None


async def next_frames(
    pilot: Pilot[Any], thread: SamplerThread, delivered: Any, n: int = 1, timeout: float = 60.0
) -> None:
    """Step ``thread``'s clock to each time it waits for, until it has taken ``n`` more frames
    and ``delivered()`` (the app's count of frames received) has grown by ``n``. The clock
    moves only while the thread waits, so it never takes one frame more than asked."""
    clock = stepped(thread)
    assert clock is not None, "the sampler thread does not run on a StepClock"
    rest = "the sampler thread at rest"  # a frame of 2,000 devices on a loaded host: seconds
    await wait_for(pilot, lambda: at_rest(thread, clock, delivered), rest, timeout)
    taken = thread.frames + n
    received = delivered() + n

    def arrived() -> bool:
        if delivered() >= received:
            return True
        if thread.frames < taken:
            clock.release_waiter()  # the frame it waits for is due now
        return False

    await wait_for(pilot, arrived, f"{n} more frame(s)", timeout)


def at_rest(thread: SamplerThread, clock: StepClock, delivered: Callable[[], int]) -> bool:
    """The thread waits on the clock with no frame asked for at once (``sample_now``: a view
    just mounted or a detail opened), and every frame it took has been received. Stepping
    counts from there, so a frame a view asked for never passes for a stepped one."""
    woken = thread._wake.is_set()  # sample_now() or a new interval: a frame comes at once
    return clock.waiting and not woken and delivered() >= thread.frames


async def step_until(
    pilot: Pilot[Any],
    thread: SamplerThread,
    condition: Callable[[], object],
    what: str = "the condition",
    frames: int = 20,
) -> None:
    """Step ``thread``'s clock one frame at a time until ``condition()`` holds; fail naming
    ``what`` after ``frames`` frames."""
    for _ in range(frames):
        if condition():
            await pilot.pause()
            return
        await next_frames(pilot, thread, lambda: thread.frames)
    assert condition(), f"{what} not met within {frames} frames"


async def step_awaiting(
    pilot: Pilot[Any],
    thread: SamplerThread,
    condition: Callable[[], object],
    what: str = "the condition",
    timeout: float = 15.0,
    pace: float = 0.1,
) -> None:
    """For a condition on something that runs in real time (a tracer, a writer process, a
    device being attached): step ``thread``'s clock one frame every ``pace`` s of wall time,
    so the outside world moves on between frames, until ``condition()`` holds; fail naming
    ``what`` after ``timeout`` s. Frames still come only when stepped."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s of stepped frames")
        await next_frames(pilot, thread, lambda: thread.frames, timeout=timeout)
        # Up to ``pace`` of wall time for the outside world, no longer than the condition needs.
        rest = time.monotonic() + pace
        while not condition() and time.monotonic() < rest:
            await pilot.pause(POLL_S)
    await pilot.pause()
