"""The one schedule, and the thread that takes the TUI's frames on it.

Every loop that takes frames runs on a :class:`Schedule`: the TUI's :class:`SamplerThread`,
``snapshot`` and ``top`` (:func:`frames_on_schedule`), ``serve``
and its ``--textfile`` (:class:`~iotop_plus.export.view.ExportSampler`) and ``record``. The
rule: the next frame is due one interval after the previous
one *was due*, so the time a frame takes to read never makes the schedule drift; a frame
that is already late when its wait begins is taken at once, and the next is due one interval
after it, so a stall (a hung disk) never brings a burst of catch-up frames. The wait reads
time from an injectable :class:`Clock`, so tests step it by hand.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # frame.py's types only: frame.py needs nothing from here
    from iotop_plus.sampling.frame.model import Frame, FrameSource

MIN_INTERVAL = 0.25
"""Shortest interval between frames, in seconds."""
MAX_INTERVAL = 10.0
"""Longest interval between frames, in seconds."""

FIRST_INTERVAL_S = 0.1
"""The second frame comes this soon after the first (or one interval, if shorter), so rates
appear at once; that frame is marked ``short_interval``."""


def clamp_interval(seconds: float) -> float:
    """``seconds`` within :data:`MIN_INTERVAL` .. :data:`MAX_INTERVAL`."""
    return min(MAX_INTERVAL, max(MIN_INTERVAL, seconds))


class Clock(Protocol):
    """Where a :class:`Schedule` reads the time and waits (tests step a fake one by hand)."""

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    def wait(self, event: threading.Event | None, seconds: float) -> bool:
        """Wait ``seconds`` or until ``event`` is set; True when it was set."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` (the clock frames are stamped with)."""

    def now(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def wait(self, event: threading.Event | None, seconds: float) -> bool:
        """``event.wait(seconds)``, or a plain sleep without an event."""
        if event is None:
            time.sleep(max(0.0, seconds))
            return False
        return event.wait(max(0.0, seconds))


MONOTONIC = MonotonicClock()
"""The clock every schedule uses unless it is given another."""


class Schedule:
    """When the next frame is due.

    Call :meth:`start` when the first frame was taken, then :meth:`wait` before each of the
    others. The first interval is ``first_interval`` when that is shorter (figures at once);
    :attr:`short` says the frame being waited for comes after it.

    Args:
        interval: Seconds between frames.
        first_interval: Seconds from the first frame to the second; None: one interval.
        clock: Where time is read and waited for; default :data:`MONOTONIC`.
    """

    def __init__(
        self,
        interval: float,
        *,
        first_interval: float | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else MONOTONIC
        self._interval = interval
        self._first = first_interval
        self._prev_due: float | None = None
        self._due: float | None = None
        self.short = False
        """True while the frame waited for is the one after the short first interval."""
        self.late = 0
        """Frames that were due before their wait began (taken at once)."""

    @property
    def interval(self) -> float:
        """Seconds between frames."""
        return self._interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        """A new interval re-plans the next frame from the time the previous one was due."""
        self._interval = seconds
        if self._prev_due is not None:
            self._due = self._prev_due + self._gap()

    @property
    def due(self) -> float | None:
        """When the next frame is due (None before :meth:`start`)."""
        return self._due

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._due is not None

    def _gap(self) -> float:
        if self.short and self._first is not None:
            return min(self._first, self._interval)
        return self._interval

    def start(self, at: float | None = None, rates: bool = False) -> None:
        """The first frame was due (taken) at ``at``; default now. ``rates``: it had rates
        already (read a short interval after another), so the next needs no short interval."""
        base = self.clock.now() if at is None else at
        self.short = not rates and self._first is not None and self._first < self._interval
        self._prev_due = base
        self._due = base + self._gap()

    def wait(self, event: threading.Event | None = None) -> bool:
        """Wait until the next frame is due, then plan the one after; False when ``event``
        was set first (the caller stops, or looks at why it was woken and calls again).

        A frame already due when the wait begins is late: it is taken at once and counts as
        due now, so the next one is one interval after it (no burst).
        """
        if self._due is None:
            self.start()
        assert self._due is not None
        if self.clock.now() > self._due:
            self.late += 1
            self._due = self.clock.now()
        else:
            while (left := self._due - self.clock.now()) > 0:
                if self.clock.wait(event, left):
                    return False
        if event is not None and event.is_set():
            return False
        self._taken(self._due)
        return True

    def take_now(self) -> None:
        """The next frame is taken now, off the schedule (a view wants fresh figures): the
        one after it is due one interval later."""
        self._taken(self.clock.now())

    def _taken(self, due: float) -> None:
        self.short = False
        self._prev_due = due
        self._due = due + self._interval


class SamplerThread(threading.Thread):
    """Takes a frame from ``source`` on a :class:`Schedule` and hands it to ``deliver``.

    Args:
        source: Where frames come from.
        deliver: Called in this thread with each frame (post it to the UI from there).
        failed: Called in this thread with one line when a frame could not be built;
            sampling goes on.
        interval: Seconds between frames (clamped).
        first_interval: Seconds before the second frame (the first has no rates).
        clock: The schedule's clock (tests step a fake one); default the real one.
    """

    def __init__(
        self,
        source: FrameSource,
        deliver: Callable[[Frame], object],
        failed: Callable[[str], object],
        interval: float = 1.0,
        first_interval: float = FIRST_INTERVAL_S,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name="iotop-plus-sampler", daemon=True)
        self.source = source
        self._deliver = deliver
        self._failed = failed
        self.schedule = Schedule(
            clamp_interval(interval), first_interval=first_interval, clock=clock
        )
        self._stop_event = threading.Event()
        self._wake = threading.Event()
        self.frames = 0
        """Frames delivered so far."""

    @property
    def interval(self) -> float:
        """Seconds between frames."""
        return self.schedule.interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self.schedule.interval = clamp_interval(seconds)  # re-planned from the last due time
        self._wake.set()

    def sample_now(self) -> None:
        """Take the next frame at once (a view needs fresh data, e.g. a process detail)."""
        self._now = True
        self._wake.set()

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the thread to finish and wait briefly for it."""
        self._stop_event.set()
        self._wake.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join(timeout)

    _now = False

    def run(self) -> None:
        schedule = self.schedule
        short = rates = False
        while not self._stop_event.is_set():
            started = schedule.clock.now()
            try:
                frame = self.source.next_frame(early=self._deliver)
                if short:
                    frame = dataclasses.replace(frame, short_interval=True)
                self.frames += 1
                self._deliver(frame)
                if not schedule.started:
                    # A primed first frame was read before we started: count from its time.
                    started = min(started, frame.monotonic)
                    rates = frame.elapsed_s is not None
            except Exception as exc:  # a bad frame must not end sampling or the app
                self._failed(f"sampling failed: {type(exc).__name__}: {exc}")
            if not schedule.started:
                # A first frame with rates needs no second one soon: reading it at once, while
                # the screen mounts, only slowed the first paint.
                schedule.start(started, rates=rates)
            short = schedule.short  # the first frame has no rates: the second comes soon
            if not self._wait():
                break
        with contextlib.suppress(Exception):  # closing must not raise out of the thread
            self.source.close()

    def _wait(self) -> bool:
        """Wait for the next frame on the schedule; False when asked to stop."""
        while not self.schedule.wait(self._wake):
            self._wake.clear()
            if self._stop_event.is_set():
                return False
            if self._now:
                self._now = False
                self.schedule.take_now()
                return True
            # Woken by a new interval: the schedule re-planned it, wait again.
        return not self._stop_event.is_set()


def frames_on_schedule(
    source: FrameSource,
    interval: float,
    count: int,
    *,
    first: Frame | None = None,
    clock: Clock | None = None,
    on_frame: Callable[[Frame], object] | None = None,
) -> Iterator[tuple[Frame, Frame]]:
    """``count`` measured intervals: (previous, current) frame pairs, iostat's way.

    The first frame (``first``, or one read now) is only the baseline. Frames follow the one
    :class:`Schedule` from it (``clock``: tests step a fake one),
    so slow reads do not make the intervals drift. ``on_frame`` sees every frame read here
    (for warnings about what could not be read).
    """
    prev = first
    if prev is None:
        prev = source.next_frame()
        if on_frame is not None:
            on_frame(prev)
    schedule = Schedule(interval, clock=clock)
    schedule.start(prev.monotonic)
    for _ in range(count):
        schedule.wait()
        cur = source.next_frame()
        if on_frame is not None:
            on_frame(cur)
        yield prev, cur
        prev = cur
