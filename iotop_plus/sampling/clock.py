"""The one clock: a thread that takes a frame from a source every interval.

Everything that shows live figures (the TUI's views, later the recorder and the exporter)
hangs off one :class:`SamplerThread`, so the interval lives in one place. The next frame is
due one interval after the previous one *started*; a frame that takes longer than the
interval delays the next one, so frames never stack. Changing the interval re-plans the next
frame at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable

from iotop_plus.sampling.frame import Frame, FrameSource

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


class SamplerThread(threading.Thread):
    """Takes a frame from ``source`` every :attr:`interval` and hands it to ``deliver``.

    Args:
        source: Where frames come from.
        deliver: Called in this thread with each frame (post it to the UI from there).
        failed: Called in this thread with one line when a frame could not be built;
            sampling goes on.
        interval: Seconds between frames (clamped).
        first_interval: Seconds before the second frame (the first has no rates).
    """

    def __init__(
        self,
        source: FrameSource,
        deliver: Callable[[Frame], object],
        failed: Callable[[str], object],
        interval: float = 1.0,
        first_interval: float = FIRST_INTERVAL_S,
    ) -> None:
        super().__init__(name="iotop-plus-sampler", daemon=True)
        self.source = source
        self._deliver = deliver
        self._failed = failed
        self._interval = clamp_interval(interval)
        self._first_interval = first_interval
        self._stop_event = threading.Event()
        self._wake = threading.Event()
        self.frames = 0
        """Frames delivered so far."""

    @property
    def interval(self) -> float:
        """Seconds between frames."""
        return self._interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self._interval = clamp_interval(seconds)
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
        short = False
        while not self._stop_event.is_set():
            started = time.monotonic()
            try:
                frame = self.source.next_frame(early=self._deliver)
                if short:
                    frame = dataclasses.replace(frame, short_interval=True)
                self.frames += 1
                self._deliver(frame)
                if self.frames == 1:
                    # A primed first frame was read before we started: count from its time.
                    started = min(started, frame.monotonic)
            except Exception as exc:  # a bad frame must not end sampling or the app
                self._failed(f"sampling failed: {type(exc).__name__}: {exc}")
            # The first frame has no rates: take the second one soon.
            short = self.frames == 1 and self._first_interval < self._interval
            wait = self._first_interval if short else self._interval
            self._sleep_until(started, wait)
        with contextlib.suppress(Exception):  # closing must not raise out of the thread
            self.source.close()

    def _sleep_until(self, started: float, wait: float) -> None:
        deadline = started + wait
        while not self._stop_event.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._wake.wait(remaining):
                self._wake.clear()
                if self._now:
                    self._now = False
                    return
                # The interval changed: re-plan from the same start.
                deadline = started + self._interval
