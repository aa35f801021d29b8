"""The frame store: every frame the TUI shows, live or earlier, kept one way and found by time.

Frames are kept in memory by chunk (:mod:`~iotop_plus.record.store_chunk`): the open chunk's
as they were appended, a closed one's encoded as a recording encodes them
(:class:`~iotop_plus.record.chunks.ChunkEncoder`: raw counters with predicted deltas, the
parts as JSON, in one deflate stream per chunk) on a thread of its own
(:mod:`~iotop_plus.record.store_encode`), and decoded again when looked up
(:mod:`~iotop_plus.record.store_decode`); a recording directory, read
by :class:`~iotop_plus.record.timeline.RecordingTimeline`, holds the same chunks in files and
is chained before the memory ring for history (``JoinedTimeline``).

Frames are ordered as they were appended (frame sequence and monotonic time); wall time labels
them and is what :meth:`FrameStore.at` takes. A wall clock stepped back (NTP, a manual date)
hides the frames that now lie in its future, as a later recording file hides an earlier one,
and leaves a :class:`ClockMark`. Each device's chart figures are kept beside the chunks and
read by :meth:`FrameStore.columns`, keyed by the device's identity (name and ``diskseq``): a
name that is another device now has a series of its own.

Not thread-safe: one thread (the UI's) appends and reads; only the encoding of closed chunks
runs beside it.
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict, deque
from collections.abc import Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.record.store_chunk import Chunk
from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.active import KEPT_CGROUPS, active_cgroup_frame
from iotop_plus.sampling.clock import MIN_INTERVAL, clamp_interval
from iotop_plus.sampling.frame.model import Frame, ProcessFrame
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.sampling.store.timeline import MARKED_EVENTS, METRICS, Columns, Mark

if TYPE_CHECKING:  # loaded with the first chunk closed or looked up (the class's doc)
    from iotop_plus.record.chunks import RecordedSample
    from iotop_plus.record.store_decode import Decoded
    from iotop_plus.record.store_encode import ChunkCoder

DEFAULT_MINUTES = 15
"""Minutes of frames kept by default (``history_minutes`` in the config)."""

TOP_PROCESSES = 20
"""Processes kept per frame, the busiest by I/O over the frame's interval."""

RECENT_KEPT = 8
"""The last frames appended are kept as they came: the Device tab's verdict looks back on the
five before the one shown at every frame."""

OPEN_CELLS = 2_500
"""A chunk is closed once it holds this many device-frames (its frames are kept as they came
until it is encoded, ~750 bytes of objects a device; a free loop node counts a quarter,
:func:`~iotop_plus.record.store_chunk.frame_cells`): 42 frames (10.5 s at 0.25 s) at 60
devices, 13 at 200, 2 at 2,000. Chunks twice as long pack a tenth smaller a frame but hold
twice the frames as objects at their fullest (~1.9 MB more at 60 devices: the TUI's memory
is its high-water mark)."""

MARKS_KEPT = 100
"""Chart marks (and clock steps) kept, the latest."""

DECODED_KEPT = 2
"""Chunks kept decoded: the one a scrub is in and the one before (its first frame's rates
need that chunk's last sample). A decoded chunk holds its samples' counters as objects, a few
hundred bytes a device a frame: more would weigh on the memory goal."""


@dataclasses.dataclass(frozen=True)
class ClockMark:
    """The wall clock stepped back between two frames."""

    wall: float
    """Wall time of the first frame after the step."""
    back_s: float
    """How far it stepped back, in seconds."""


class FrameStore:
    """The last ``minutes`` of frames, looked up by wall time (a ``Timeline``).

    The encoding modules load with the first chunk closed (:attr:`coder`) and the decoding
    ones with the first look-up of an encoded chunk (:mod:`~iotop_plus.record.store_decode`):
    the TUI's first figures wait for neither (docs/performance.md).
    """

    def __init__(
        self,
        minutes: float = DEFAULT_MINUTES,
        interval: float = 1.0,
        *,
        roots: Roots | None = None,
        top_processes: int = TOP_PROCESSES,
        background: bool = True,
    ) -> None:
        if not (math.isfinite(minutes) and minutes > 0):
            raise ValueError(f"history minutes must be a positive number, not {minutes!r}")
        self.minutes = float(minutes)
        """How far back frames are kept."""
        self.top_processes = top_processes
        """Processes kept per frame."""
        self.capacity = self._capacity_for(interval)
        """Frames kept at most: ``minutes`` at the current interval."""
        self.roots = roots or Roots()
        self.marks: deque[ClockMark] = deque(maxlen=MARKS_KEPT)
        """The wall clock's steps back, oldest first."""
        self.chart_marks: deque[Mark] = deque(maxlen=MARKS_KEPT)
        """What the charts mark (the frames' setting and probe events, probe starts, the
        clock's steps back), oldest first."""
        self.background = background
        """Closed chunks are encoded on a thread of their own (else at once)."""
        self._coder: ChunkCoder | None = None
        self._chunks: deque[Chunk] = deque()
        self._starts: list[int] = []
        self._next = 0
        """The ordinal of the next frame appended."""
        # The frames that can be looked up by wall time, in wall time order: their wall times
        # and ordinals; those before ``_lo`` are out of the window.
        self._walls: array[float] = array("d")
        self._ords: array[int] = array("q")
        self._lo = 0
        self._recent: OrderedDict[int, Frame] = OrderedDict()
        self._decoded: OrderedDict[int, Decoded] = OrderedDict()

    def _capacity_for(self, interval: float) -> int:
        return math.ceil(self.minutes * 60.0 / clamp_interval(interval)) + 1

    @property
    def max_capacity(self) -> int:
        """Frames kept at the fastest interval: the bound whatever the user does."""
        return self._capacity_for(MIN_INTERVAL)

    def set_interval(self, seconds: float) -> None:
        """The interval changed: keep ``minutes`` of frames at the new pace."""
        self.capacity = self._capacity_for(seconds)
        self._trim()

    def __len__(self) -> int:
        return len(self._walls) - self._lo

    def nbytes(self) -> int:
        """Bytes held by the chunks and the index (not the frames kept as appended)."""
        index = (len(self._walls) + len(self._ords)) * 8
        return index + sum(c.nbytes() for c in self._chunks)

    # ---- appending ---------------------------------------------------------------------------

    def append(self, frame: Frame) -> None:
        """Keep ``frame`` (stripped to its top processes); drop what is now too old.

        A frame that lists device names only (the quick first frame of a huge host) is not
        kept: the full one follows at once.
        """
        if frame.inventory_changed and not frame.inventory.devices and frame.sample.counters:
            return
        kept = strip_processes(frame, self.top_processes)
        if kept.cgroups is not None:
            kept = dataclasses.replace(
                kept, cgroups=active_cgroup_frame(kept.cgroups, KEPT_CGROUPS)
            )
        wall = kept.sample.wall_time
        self._step_back(wall)
        names = tuple(kept.sample.counters)
        chunk = self._chunks[-1] if self._chunks else None
        if chunk is None or not chunk.fits(kept, names) or len(chunk) * chunk.cells >= OPEN_CELLS:
            if chunk is not None:
                self._close(chunk)
            same_devices = chunk is not None and chunk.names == names
            chunk = Chunk(
                self._next,
                chunk.names if chunk is not None and same_devices else names,
                kept.sample.identities,
                kept.inventory,
                kept.nr_requests,
                kept.inventory_changed,
                chunk.positions if chunk is not None and same_devices else {},
                cells=(
                    chunk.cells
                    if chunk is not None and same_devices and chunk.inventory is kept.inventory
                    else 0
                ),
            )
            self._chunks.append(chunk)
            self._starts.append(chunk.start)
        chunk.add(kept)
        for event in kept.events:
            # An applied setting change or a probe result the frame's journal part read (from
            # this TUI or any other run), at its own time.
            if event.kind in MARKED_EVENTS and event.marked:
                at = wall if event.monotonic is None else wall + event.monotonic - kept.monotonic
                self.chart_marks.append(Mark(at, event.text, event.device))
        self._walls.append(wall)
        self._ords.append(self._next)
        self._recent[self._next] = kept
        if len(self._recent) > RECENT_KEPT:
            self._recent.popitem(last=False)
        self._next += 1
        self._trim()

    @property
    def coder(self) -> ChunkCoder:
        """Encodes the closed chunks (made with the first)."""
        if self._coder is None:
            from iotop_plus.record.store_encode import ChunkCoder

            self._coder = ChunkCoder(self.roots, self.top_processes, background=self.background)
        return self._coder

    def _close(self, chunk: Chunk) -> None:
        """No more frames join ``chunk``: encode it."""
        if chunk.open:
            chunk.close()
            self.coder.submit(chunk)

    def wait_encoded(self) -> None:
        """Return once every closed chunk is encoded (tests, benchmarks)."""
        if self._coder is not None:
            self._coder.wait()

    def _step_back(self, wall: float) -> None:
        """Hide the frames at or after ``wall`` (the clock stepped back), with a mark."""
        walls = self._walls
        if not walls or wall > walls[-1]:
            return
        if wall < walls[-1]:
            self.marks.append(ClockMark(wall, walls[-1] - wall))
            self.chart_marks.append(Mark(wall, f"clock back {walls[-1] - wall:.0f} s"))
        cut = max(self._lo, bisect_left(walls, wall, self._lo))
        del walls[cut:]
        del self._ords[cut:]
        if self._chunks:
            self._close(self._chunks[-1])

    def _trim(self) -> None:
        walls = self._walls
        if len(walls) > self._lo:
            oldest_kept = walls[-1] - self.minutes * 60.0
            while len(self) > 0 and (len(self) > self.capacity or walls[self._lo] < oldest_kept):
                self._lo += 1
        # A chunk goes once the first frame shown is past the next chunk's first frame (whose
        # rates need the last frame before it).
        first = self._ords[self._lo] if len(self) else self._next
        chunks = self._chunks
        while len(chunks) > 1 and chunks[1].start < first:
            gone = chunks.popleft()
            gone.dropped = True
            self._starts.pop(0)
            self._decoded.pop(gone.start, None)
        if self._lo > 1024 and self._lo * 2 > len(walls):
            del walls[: self._lo]
            del self._ords[: self._lo]
            self._lo = 0

    # ---- looking up --------------------------------------------------------------------------

    def _chunk_of(self, ordinal: int) -> Chunk:
        return self._chunks[bisect_right(self._starts, ordinal) - 1]

    def _decode(self, chunk: Chunk) -> Decoded:
        got = self._decoded.get(chunk.start)
        if got is not None and got.size == len(chunk):
            self._decoded.move_to_end(chunk.start)
            return got
        from iotop_plus.record import store_decode

        got = store_decode.Decoded(
            chunk, store_decode.decode(chunk), lambda: self._last_before(chunk)
        )
        self._decoded[chunk.start] = got
        while len(self._decoded) > DECODED_KEPT:
            self._decoded.popitem(last=False)
        return got

    def _last_before(self, chunk: Chunk) -> RecordedSample | None:
        """The last sample of the chunk just before ``chunk`` (the base of its first rates)."""
        k = bisect_right(self._starts, chunk.start) - 2
        if k < 0 or self._chunks[k].end != chunk.start:
            return None
        before = self._chunks[k]
        frames = before.frames
        if frames is not None:  # not encoded (yet): its last frame as the recorder has it
            from iotop_plus.record.store_decode import last_of

            return last_of(frames, self.roots, self.top_processes)
        samples = self._decode(before).samples
        return samples[-1] if samples else None

    def _frame(self, pos: int) -> Frame | None:
        ordinal = self._ords[pos]
        recent = self._recent.get(ordinal)
        if recent is not None:
            return recent
        chunk = self._chunk_of(ordinal)
        frames = chunk.frames  # (once: the encoding thread may drop them meanwhile)
        if frames is not None:
            return frames[ordinal - chunk.start]
        return self._decode(chunk).frame(ordinal - chunk.start)

    def frames(self) -> list[Frame]:
        """Every frame that can be looked up, oldest first."""
        return self._frames(self._lo, len(self._walls))

    def _frames(self, lo: int, hi: int) -> list[Frame]:
        return [f for pos in range(lo, hi) if (f := self._frame(pos)) is not None]

    def span(self) -> tuple[float, float] | None:
        """Wall times of the first and last frame, or None while empty."""
        if not len(self):
            return None
        return self._walls[self._lo], self._walls[-1]

    def _index_at(self, wall: float) -> int:
        # The frame at wall or the last before it; the first shown when wall is earlier.
        return max(self._lo, bisect_right(self._walls, wall, self._lo) - 1)

    def at(self, wall: float) -> Frame | None:
        """The frame at ``wall`` or the last one before it (the first if ``wall`` is earlier)."""
        if not len(self):
            return None
        return self._frame(self._index_at(wall))

    frame_at = at

    def step(self, wall: float, n: int) -> Frame | None:
        """The frame ``n`` samples after or before the one at ``wall``, clamped to the ends."""
        if not len(self):
            return None
        index = min(len(self._walls) - 1, max(self._lo, self._index_at(wall) + n))
        return self._frame(index)

    def between(self, t0: float, t1: float) -> list[Frame]:
        """Frames with ``t0 < wall_time <= t1``, oldest first."""
        lo = bisect_right(self._walls, t0, self._lo)
        hi = bisect_right(self._walls, t1, self._lo)
        return self._frames(lo, hi)

    def window(self, end: float, seconds: float) -> list[Frame]:
        """Frames with ``end - seconds < wall_time <= end``, oldest first."""
        return self.between(end - seconds, end)

    def identity(self, device: str, wall: float | None = None) -> str | None:
        """The identity ``device`` had at ``wall`` (the newest frame's when None)."""
        if not len(self):
            return None
        pos = len(self._walls) - 1 if wall is None else self._index_at(wall)
        chunk = self._chunk_of(self._ords[pos])
        if device not in chunk.positions:
            return None
        return chunk.identities.get(device, device)

    def columns(self, device: str, t0: float, t1: float) -> Columns:
        """``device``'s figures for frames with ``t0 < wall_time <= t1``, oldest first: only
        while it was the device it is at ``t1`` (same identity)."""
        lo = bisect_right(self._walls, t0, self._lo)
        hi = bisect_right(self._walls, t1, self._lo)
        walls: array[float] = array("d")
        figures = {m: array("f") for m in METRICS}
        if lo >= hi:
            return Columns(walls, figures)
        wanted = self.identity(device, self._walls[hi - 1])
        pos = lo
        while pos < hi:
            ordinal = self._ords[pos]
            chunk = self._chunk_of(ordinal)
            # The run of shown frames in this chunk: one by one from ``ordinal`` (a step back
            # hides a chunk's last frames, the window's start its first).
            end = bisect_left(self._ords, chunk.end, pos, hi)
            if (
                wanted is not None
                and device in chunk.positions
                and chunk.identities.get(device, device) == wanted
            ):
                a, b = ordinal - chunk.start, ordinal - chunk.start + (end - pos)
                walls.extend(self._walls[pos:end])
                for k, metric in enumerate(METRICS):
                    figures[metric].extend(chunk.series(device, k)[a:b])
            pos = end
        return Columns(walls, figures)

    def mark(self, mark: Mark) -> None:
        """Mark a moment on the charts (a probe's start)."""
        self.chart_marks.append(mark)

    def chart(self, device: str, t0: float, t1: float) -> tuple[Columns, list[Mark]]:
        """``device``'s :meth:`columns` and the marks within ``(t0, t1]``."""
        marks = [m for m in self.chart_marks if t0 < m.timestamp <= t1]
        return self.columns(device, t0, t1), marks

    def devices(self) -> Iterable[str]:
        """The devices of the newest frame."""
        return self._chunks[-1].names if self._chunks else ()


def strip_processes(frame: Frame, keep: int) -> Frame:
    """``frame`` with only its ``keep`` busiest processes (by I/O over the interval).

    On the first process frame there are no rates yet: the biggest totals are kept instead.
    The processes among the frame's issuers are kept too (the Processes tab's "this device
    only" lists them in history). The detailed process's threads and open files stay as they
    are (one process).
    """
    procs = frame.processes
    if procs is None or len(procs.sample.tasks) <= keep:
        return frame
    if procs.rates:
        ranked = sorted(
            procs.rates,
            key=lambda k: r.disk_bps if (r := procs.rates[k]) is not None else -1.0,
            reverse=True,
        )
    else:
        ranked = sorted(
            procs.totals,
            key=lambda k: (procs.totals[k].read_bytes or 0) + (procs.totals[k].write_bytes or 0),
            reverse=True,
        )
    who_part = frame.get(IssuersPart)
    issuers = who_part.devices.values() if who_part is not None else ()
    wanted = {i.pid for who in issuers for i in who if i.pid is not None}
    top = ranked[:keep] + [k for k in ranked[keep:] if k[0] in wanted]
    tasks = procs.sample.tasks
    kept = ProcessFrame(
        sample=dataclasses.replace(
            procs.sample, tasks=MappingProxyType({k: tasks[k] for k in top if k in tasks})
        ),
        rates=MappingProxyType({k: procs.rates[k] for k in top if k in procs.rates}),
        totals=MappingProxyType({k: procs.totals[k] for k in top if k in procs.totals}),
        detail_rates=procs.detail_rates,
        open_files=procs.open_files,
        cgroups=MappingProxyType({k: procs.cgroups[k] for k in top if k in procs.cgroups}),
    )
    return dataclasses.replace(frame, processes=kept)
