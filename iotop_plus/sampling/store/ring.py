"""The TUI's own history: the last minutes of frames in memory, as a :class:`Timeline`.

Every live frame is appended; frames older than ``minutes`` (and beyond the count that many
minutes make at the current interval) are dropped, so memory stays bounded whatever runs.
Frames keep sharing their inventory object (the live source hands out the same one until the
devices change), and only the top processes by I/O (with their cgroups) and the cgroups that
did I/O are kept per frame: a busy host has thousands of tasks and idle cgroups, and the
Processes and Cgroups tabs show the top of their lists anyway. The disk counters and rates,
the bulk of a frame, are kept packed (:mod:`~iotop_plus.sampling.store.packed`) and a frame
is rebuilt when it is looked up.

A packed frame holds its changes from the frame before, and its rates are rebuilt from that
frame's counters, so the frames that fall out of the window are not dropped one by one: they
are hidden, and dropped up to the last frame with full values that the oldest frame shown
still needs (at most :data:`~iotop_plus.sampling.store.packed.KEY_EVERY` of them), rather
than packing the oldest frame anew at every drop (docs/performance.md).
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from iotop_plus.sampling.cgroups.active import KEPT_CGROUPS, active_cgroup_frame
from iotop_plus.sampling.clock import MIN_INTERVAL, clamp_interval
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.frame.model import Frame, ProcessFrame
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.sampling.store.packed import PackedFrame, Packer

DEFAULT_MINUTES = 15
"""Minutes of frames kept by default (``history_minutes`` in the config)."""

FLATS_KEPT = 16
"""Frames whose unpacked counter values are kept (the last appended, the last looked up)."""

WINDOW_KEPT_FROM = 32
"""Windows of at least this many frames are kept once rebuilt (the charts'), ..."""

WINDOWS_KEPT = 2
"""... this many of them, the latest."""

RECENT_KEPT = 8
"""The last frames appended are kept as they came: the Device tab's verdict looks back on the
five before the one shown at every frame, and rebuilding them (their pickled parts: health
per device) would be most of the TUI's work at scale (docs/performance.md)."""

TOP_PROCESSES = 20
"""Processes kept per frame, the busiest by I/O over the frame's interval."""


class RingTimeline:
    """The last ``minutes`` of frames, oldest first, looked up by wall time (bisect).

    Not thread-safe: the UI thread appends and reads.
    """

    def __init__(
        self,
        minutes: float = DEFAULT_MINUTES,
        interval: float = 1.0,
        top_processes: int = TOP_PROCESSES,
    ) -> None:
        if not (math.isfinite(minutes) and minutes > 0):
            raise ValueError(f"history minutes must be a positive number, not {minutes!r}")
        self.minutes = float(minutes)
        """How far back frames are kept."""
        self.top_processes = top_processes
        """Processes kept per frame."""
        self.capacity = self._capacity_for(interval)
        """Frames kept at most: ``minutes`` at the current interval."""
        self._walls: deque[float] = deque()
        self._frames: deque[PackedFrame] = deque()
        self._hidden = 0
        """Frames at the front of ``_frames`` that are out of the window, kept only as the
        base of the oldest frame shown (its changes and rates)."""
        self._packer = Packer()
        # The last frame appended: the base of the next one's changes and rates.
        self._last: tuple[PackedFrame, array[int], Mapping[str, DiskCounters]] | None = None
        self._since_key = 0
        # Flat counter values of a few frames lately unpacked (by the packed frame's id).
        self._flats: dict[int, tuple[PackedFrame, array[int]]] = {}
        # The last windows rebuilt (the charts ask for the same 600 frames at every redraw
        # while history is shown; a frame with its processes takes ~0.3 ms to rebuild).
        self._windows: dict[tuple[int, int, int], tuple[PackedFrame, PackedFrame, list[Frame]]] = {}
        # The last frames appended, as they came (by the packed frame's id).
        self._recent: dict[int, tuple[PackedFrame, Frame]] = {}

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
        return len(self._frames) - self._hidden

    def frames(self) -> list[Frame]:
        """Every frame kept, oldest first."""
        return self._unpack(self._hidden, len(self._frames))

    def append(self, frame: Frame) -> None:
        """Keep ``frame`` (stripped to its top processes); drop what is now too old.

        A frame that lists device names only (the quick first frame of a huge host) is not
        kept: the full one follows at once. A wall clock stepped back (NTP, a manual date)
        drops the frames that would now lie in the future of the new one, so the ring stays
        in time order.
        """
        if frame.inventory_changed and not frame.inventory.devices and frame.sample.counters:
            return
        wall = frame.wall_time
        while self._walls and self._walls[-1] >= wall:
            self._walls.pop()
            self._recent.pop(id(self._frames.pop()), None)
            self._last = None
        if len(self._frames) <= self._hidden:  # only hidden frames left: bases of nothing
            self._clear()
        self._walls.append(wall)
        kept = strip_processes(frame, self.top_processes)
        if kept.cgroups is not None:
            kept = dataclasses.replace(
                kept, cgroups=active_cgroup_frame(kept.cgroups, KEPT_CGROUPS)
            )
        prev, prev_flat, prev_counters = self._last if self._last else (None, None, None)
        packed, flat = self._packer.pack(kept, prev, prev_counters, prev_flat, self._since_key)
        self._since_key = 0 if packed.is_key else self._since_key + 1
        self._last = (packed, flat, kept.sample.counters)
        self._remember(packed, flat)
        if len(self._recent) >= RECENT_KEPT:
            self._recent.pop(next(iter(self._recent)))
        self._recent[id(packed)] = (packed, kept)
        self._frames.append(packed)
        self._trim()

    def _trim(self) -> None:
        newest = self._walls[-1] if self._walls else 0.0
        oldest_kept = newest - self.minutes * 60.0
        walls = self._walls
        while len(self) > 0 and (len(self) > self.capacity or walls[self._hidden] < oldest_kept):
            self._hidden += 1
        # The oldest frame shown needs the one before it, which needs every frame back to
        # the last one with full values: the frames before that one go.
        drop = max(0, self._hidden - 1)
        while drop > 0 and not self._frames[drop].is_key:
            drop -= 1
        for _ in range(drop):
            self._walls.popleft()
            gone = self._frames.popleft()
            self._flats.pop(id(gone), None)
            self._recent.pop(id(gone), None)
        self._hidden -= drop

    def _clear(self) -> None:
        self._walls.clear()
        self._frames.clear()
        self._hidden = 0
        self._flats.clear()
        self._recent.clear()
        self._last = None

    def _flat(self, packed: PackedFrame, index: int) -> array[int]:
        """The flat counter values of ``packed``, at ``index`` (or before it, when it moved)."""
        hit = self._flats.get(id(packed))
        if hit is not None and hit[0] is packed:
            return hit[1]
        if not packed.is_key:
            while index > 0 and self._frames[index] is not packed:
                index -= 1
            base: array[int] | None = self._flat(self._frames[index - 1], index - 1)
        else:
            base = None
        flat = self._packer.values(packed, base)
        self._remember(packed, flat)
        return flat

    def _remember(self, packed: PackedFrame, flat: array[int]) -> None:
        """Keep ``flat`` for a while: the verdict looks back on the last few frames each frame."""
        if len(self._flats) >= FLATS_KEPT:
            self._flats.pop(next(iter(self._flats)))
        self._flats[id(packed)] = (packed, flat)

    def _unpack(self, lo: int, hi: int) -> list[Frame]:
        """Frames ``lo`` to ``hi - 1`` rebuilt, oldest first (the last few windows kept)."""
        if hi - lo < WINDOW_KEPT_FROM:
            return self._rebuild(lo, hi)
        first, last = self._frames[lo], self._frames[hi - 1]
        key = (id(first), id(last), hi - lo)
        hit = self._windows.get(key)
        if hit is not None and hit[0] is first and hit[1] is last:
            return list(hit[2])
        frames = self._rebuild(lo, hi)
        if len(self._windows) >= WINDOWS_KEPT:
            self._windows.pop(next(iter(self._windows)))
        self._windows[key] = (first, last, frames)
        return list(frames)

    def _rebuild(self, lo: int, hi: int) -> list[Frame]:
        out: list[Frame] = []
        prev_counters: Mapping[str, DiskCounters] | None = None
        base: array[int] | None = None
        if lo > 0 and lo < hi:
            before = self._frames[lo - 1]
            base = self._flat(before, lo - 1)
            prev_counters = self._packer.counters(before, base)
        for i in range(lo, hi):
            packed = self._frames[i]
            recent = self._recent.get(id(packed))
            if recent is not None and recent[0] is packed:  # kept as it came: no rebuild
                out.append(recent[1])
                base, prev_counters = self._flat(packed, i), recent[1].sample.counters
                continue
            hit = self._flats.get(id(packed))
            if hit is not None and hit[0] is packed:
                flat = hit[1]
            elif base is None or packed.is_key:
                flat = self._flat(packed, i)
            else:
                flat = self._packer.values(packed, base)
                self._remember(packed, flat)
            counters = self._packer.counters(packed, flat)
            out.append(self._packer.frame(packed, counters, prev_counters))
            base, prev_counters = flat, counters
        return out

    def _frame(self, index: int) -> Frame:
        return self._unpack(index, index + 1)[0]

    # ---- the Timeline protocol -------------------------------------------------------------

    def span(self) -> tuple[float, float] | None:
        """Wall times of the first and last frame, or None while empty."""
        if not len(self):
            return None
        return self._walls[self._hidden], self._walls[-1]

    def _index_at(self, wall: float) -> int:
        # The frame at wall or the last before it; the first shown when wall is earlier.
        return max(self._hidden, bisect_right(self._walls, wall, self._hidden) - 1)

    def frame_at(self, wall: float) -> Frame | None:
        """The frame at ``wall`` or the last one before it (the first if ``wall`` is earlier)."""
        if not len(self):
            return None
        return self._frame(self._index_at(wall))

    def step(self, wall: float, n: int) -> Frame | None:
        """The frame ``n`` samples after or before the one at ``wall``, clamped to the ends."""
        if not len(self):
            return None
        index = min(len(self._frames) - 1, max(self._hidden, self._index_at(wall) + n))
        return self._frame(index)

    def window(self, end: float, seconds: float) -> list[Frame]:
        """Frames with ``end - seconds < wall_time <= end``, oldest first."""
        lo = bisect_right(self._walls, end - seconds, self._hidden)
        hi = bisect_right(self._walls, end, self._hidden)
        return self._unpack(lo, hi)


def fill(ring: RingTimeline, frames: Iterable[Frame]) -> RingTimeline:
    """Append ``frames`` in order; returns ``ring`` (for tests and replays of canned frames)."""
    for frame in frames:
        ring.append(frame)
    return ring


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
