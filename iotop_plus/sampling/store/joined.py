"""The TUI's history reaching back into this host's recordings ("started at 03:10,
it can scrub to 02:55").

:class:`JoinedTimeline` is the frame store's memory ring, preceded by an older
:class:`Timeline` (the recording directory, opened only when a scrub first goes past the
ring's start). Frames at or
after the ring's first frame always come from the ring.

In the TUI the recordings are opened on a thread of their own (``background=True``): until
they are open, a scrub stays in the ring, so a slow or hostile file never holds the screen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.timeline import (
    Columns,
    Mark,
    Timeline,
    event_marks,
    frame_columns,
)

Warn = Callable[[str], object]
OpenOlder = Callable[[Warn], "Timeline | None"]
"""Opens the recordings, telling ``warn`` one line per file it skips; None when none."""

_BEFORE = 1e-6
"""A hair before a time, to ask for the last frame strictly before it."""


class Ring(Timeline, Protocol):
    """The TUI's frame store, as the join uses it."""

    def append(self, frame: Frame) -> None: ...

    def set_interval(self, seconds: float) -> None: ...

    def __len__(self) -> int: ...

    def identity(self, device: str, wall: float | None = None) -> str | None: ...

    def chart(self, device: str, t0: float, t1: float) -> tuple[Columns, list[Mark]]: ...


class JoinedTimeline:
    """Recorded frames (older), then the ring (newer), as one :class:`Timeline`."""

    def __init__(
        self,
        ring: Ring,
        open_older: OpenOlder,
        warn: Warn | None = None,
        *,
        background: bool = False,
    ) -> None:
        """Args:
        ring: The TUI's own frames.
        open_older: Opens the recordings (None when there are none for this host); called
            at most once, on the first scrub past the ring's start.
        warn: Told, in one line, why the recordings could not be opened, and each file
            skipped (from the opening thread when ``background``: it must be thread-safe).
        background: Open them on a thread of their own; :attr:`older` is None until then.
        """
        self.ring = ring
        self._open_older = open_older
        self._warn = warn
        self._background = background
        self._older: Timeline | None = None
        self._older_chart: tuple[str, str | None, float, float, Columns, list[Mark]] | None = None
        """The recorded part of the charts last drawn: device, identity, the ring's start,
        from when, its columns and its marks."""
        self._tried = False
        self.opened = threading.Event()
        """Set once the recordings are open, or known to be unreadable or absent."""

    # Appending and re-bounding go to the ring (the feed and the interval keys use them).
    def append(self, frame: Frame) -> None:
        """Keep a live frame (in the ring)."""
        self.ring.append(frame)

    def set_interval(self, seconds: float) -> None:
        """The ring's bound follows the interval."""
        self.ring.set_interval(seconds)

    def __len__(self) -> int:
        return len(self.ring)

    @property
    def older(self) -> Timeline | None:
        """The recordings, opened on first use (None: none, they could not be read, or, in
        the background, not open yet)."""
        if not self._tried:
            self._tried = True
            if self._background:
                threading.Thread(target=self._open, name="open-recordings", daemon=True).start()
            else:
                self._open()
        return self._older

    def _open(self) -> None:
        warn = self._warn if self._warn is not None else (lambda _line: None)
        try:
            self._older = self._open_older(warn)
        except Exception as exc:  # a bad recording must never stop the live TUI
            warn(f"recordings not used for history: {exc}")
            self._older = None
        finally:
            self.opened.set()

    def _ring_start(self) -> float | None:
        span = self.ring.span()
        return span[0] if span is not None else None

    def span(self) -> tuple[float, float] | None:
        """From the first recorded frame (once the recordings are open) to the ring's last."""
        ring = self.ring.span()
        older = self._older.span() if self._older is not None else None
        if ring is None:
            return older
        if older is None:
            return ring
        return (min(older[0], ring[0]), ring[1])

    def frame_at(self, wall: float) -> Frame | None:
        """From the ring when ``wall`` is within it, else from the recordings."""
        start = self._ring_start()
        if start is not None and wall >= start:
            return self.ring.frame_at(wall)
        older = self.older
        frame = older.frame_at(wall) if older is not None else None
        if frame is not None and (start is None or frame.wall_time < start):
            return frame
        return self.ring.frame_at(wall)

    def step(self, wall: float, n: int) -> Frame | None:
        """``n`` frames after or before the one at ``wall``, across the join; clamped."""
        frame = self.frame_at(wall)
        direction = 1 if n > 0 else -1
        for _ in range(abs(n)):
            if frame is None:
                break
            nxt = self._step_one(frame.wall_time, direction)
            if nxt is None or nxt.wall_time == frame.wall_time:
                break
            frame = nxt
        return frame

    def _step_one(self, wall: float, direction: int) -> Frame | None:
        start = self._ring_start()
        if start is not None and wall >= start:
            if direction < 0 and wall <= start:  # the ring's first frame: into the recordings
                older = self.older
                before = older.frame_at(start - _BEFORE) if older is not None else None
                if before is not None and before.wall_time < start:
                    return before
                return self.ring.frame_at(wall)
            return self.ring.step(wall, direction)
        older = self.older
        if older is None:
            return self.ring.frame_at(wall)
        nxt = older.step(wall, direction)
        leaving = (
            nxt is None or nxt.wall_time <= wall or (start is not None and nxt.wall_time >= start)
        )
        if direction > 0 and start is not None and leaving:
            return self.ring.frame_at(start)  # out of the recordings, into the ring
        return nxt

    def window(self, end: float, seconds: float) -> list[Frame]:
        """Frames in ``(end - seconds, end]``: recorded ones before the ring's start, then the
        ring's."""
        start = self._ring_start()
        frames = self.ring.window(end, seconds)
        if start is not None and end - seconds >= start:
            return frames
        older = self.older
        if older is None:
            return frames
        upto = end if start is None else min(end, start - _BEFORE)
        recorded = older.window(upto, seconds - (end - upto))
        return [f for f in recorded if start is None or f.wall_time < start] + frames

    def chart(self, device: str, t0: float, t1: float) -> tuple[Columns, list[Mark]]:
        """``device``'s figures and the marks within ``(t0, t1]``: the ring's, after the
        recorded frames before its start (while the device was the one it is at ``t1``) once
        the recordings are open (a scrub past the ring's start opens them). The recorded part
        is read once and kept while the ring's start stays: the live charts ask every frame."""
        start = self._ring_start()
        older = self._older
        ring_columns, ring_marks = self.ring.chart(device, t0, t1)
        if older is None or start is None or t0 >= start:
            return ring_columns, ring_marks
        wanted = self.ring.identity(device, t1)
        kept = self._older_chart
        if kept is None or kept[:3] != (device, wanted, start) or t0 < kept[3]:
            upto = start - _BEFORE
            frames = [f for f in older.window(upto, upto - t0) if f.wall_time < start]
            frames = [f for f in frames if f.sample.identities.get(device, device) == wanted]
            kept = (
                device,
                wanted,
                start,
                t0,
                frame_columns(frames, device),
                list(event_marks(frames)),
            )
            self._older_chart = kept
        columns = kept[4].between(t0, t1)
        columns.extend(ring_columns)
        marks = [m for m in kept[5] if t0 < m.timestamp <= t1]
        return columns, marks + ring_marks
