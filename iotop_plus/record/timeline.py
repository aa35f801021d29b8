"""A recording as a :class:`~iotop_plus.sampling.store.timeline.Timeline`: real frames by time.

Frames are built from the recorded raw counters with the live code (``rates_between``), so
every figure is what a live view would have shown for the same pair of samples. Recordings
of several files (daily files, restarts) join in time order; a frame whose previous sample is
in another file has no rates, so a gap (the recorder was down) shows as a gap.

With ``interval=S`` the timeline aggregates: frames fall every S seconds from the first
sample, each with rates over the raw counter pair S seconds apart.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from itertools import pairwise
from pathlib import Path
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.collect import inventory_from_doc
from iotop_plus.record.format import FormatError
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.recorded_frame import recorded_frame
from iotop_plus.record.recorder import recording_files
from iotop_plus.record.times import zone_of
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.topology.inventory import Inventory

Pos = tuple[int, int]
"""(entry, sample index in that entry's chunk)."""


@dataclass
class _Entry:
    file: int
    chunk: int
    first: float
    last: float
    n: int


class RecordingTimeline:
    """Frames of one or more recording files, looked up by wall time.

    Args:
        files: Opened files (kept open; :meth:`close` closes them).
        interval: Aggregate to one frame every this many seconds (None: every sample).
        directory: Where to look for new files on :meth:`refresh` (follow mode).
        warn: Receives one-line warnings.
    """

    slow_reads = True
    """A lookup may decode a chunk (up to 64 MiB): a replay looks frames up off its UI thread."""

    def __init__(
        self,
        files: list[RecordingFile],
        *,
        interval: float | None = None,
        directory: Path | None = None,
        warn: Callable[[str], object] | None = None,
    ) -> None:
        self.files = files
        self.interval = interval
        self.directory = directory
        self.warn = warn or (lambda _line: None)
        self._inventories: dict[tuple[int, int], tuple[Inventory, dict[str, int]]] = {}
        self._skipped: dict[str, int] = {}
        """Files of the directory that could not be read, and their size then (warned once;
        tried again when the size changes: a recorder may not have written its header yet)."""
        self._build()

    # --- index -------------------------------------------------------------------------------

    def _build(self) -> None:
        entries = []
        for fi, rec in enumerate(self.files):
            for ci, chunk in enumerate(rec.chunks):
                if chunk.n:
                    entries.append(
                        _Entry(fi, ci, chunk.first_ns / 1e9, chunk.last_ns / 1e9, chunk.n)
                    )
        entries = self._later_files_win(entries)
        entries.sort(key=lambda e: (e.first, e.file))
        self._entries = entries
        self._firsts = [e.first for e in entries]
        self._cum = [0]
        for e in entries:
            self._cum.append(self._cum[-1] + e.n)

    def _later_files_win(self, entries: list[_Entry]) -> list[_Entry]:
        """Where files overlap in wall time (the clock stepped back), the chunks of the
        file with the later sequence number are kept and the earlier file's chunks that
        overlap them are left out. Files without a ``seq`` (older versions) come first."""
        if len(self.files) < 2:
            return entries
        rank = {
            fi: rank
            for rank, fi in enumerate(
                sorted(range(len(self.files)), key=lambda fi: (self._seq(fi), fi))
            )
        }
        spans: dict[int, tuple[float, float]] = {}
        for e in entries:
            lo, hi = spans.get(e.file, (e.first, e.last))
            spans[e.file] = (min(lo, e.first), max(hi, e.last))
        by_start = sorted(spans.values())
        if all(a[1] < b[0] for a, b in pairwise(by_start)):
            return entries  # no two files overlap: the usual case, checked in O(files)
        kept = []
        for e in entries:
            hidden = any(
                rank[other] > rank[e.file] and lo <= e.last and e.first <= hi
                for other, (lo, hi) in spans.items()
            )
            if not hidden:
                kept.append(e)
        return kept

    def _seq(self, fi: int) -> int:
        seq = self.files[fi].header.get("seq")
        return seq if isinstance(seq, int) else -1

    def refresh(self) -> bool:
        """Read what recorders appended since (and new files); True if anything came."""
        grew = False
        for rec in self.files:
            grew = rec.refresh() or grew
        if self.directory is not None:
            known = {os.path.realpath(f.path) for f in self.files}
            for path in recording_files(self.directory, every_kind=True):
                if os.path.realpath(path) not in known:
                    opened = open_skipping(path, self.warn, self._skipped, follow=True)
                    if opened is not None:
                        self.files.append(opened)
                        grew = True
        if grew:
            self._build()
        return grew

    def close(self) -> None:
        """Close every file."""
        for rec in self.files:
            rec.close()

    @property
    def header(self) -> dict[str, Any]:
        """The header of the newest file (host, kernel, zone...)."""
        return self.files[-1].header if self.files else {}

    def host_info(self) -> HostInfo:
        """Header facts of the recorded host."""
        head = self.header
        return HostInfo(str(head.get("host", "?")), str(head.get("kernel", "?")), None, False)

    @property
    def zone(self) -> tzinfo:
        """The recorded host's zone (what the replay TUI reads times in and shows)."""
        return zone_of(self.header.get("zone"), self.header.get("utc_offset_s"))

    def __len__(self) -> int:
        return self._cum[-1]

    # --- positions ---------------------------------------------------------------------------

    def _samples(self, e: int) -> list[RecordedSample]:
        entry = self._entries[e]
        return self.files[entry.file].samples(entry.chunk)

    def _pos_at(self, wall: float) -> Pos | None:
        if not self._entries:
            return None
        e = bisect.bisect_right(self._firsts, wall) - 1
        if e < 0:
            return self._readable((0, 0), 1)
        samples = self._samples(e)
        while not samples and e > 0:  # a chunk found corrupt when decoded
            e -= 1
            samples = self._samples(e)
        if not samples:  # every chunk up to here is corrupt: the first readable one after
            return self._readable((e, 0), 1)
        i = bisect.bisect_right([s.sample.wall_time for s in samples], wall) - 1
        return (e, max(0, i))

    def _readable(self, pos: Pos, direction: int) -> Pos | None:
        """``pos`` if it holds a sample, else the nearest one that does going ``direction``
        (then the other way): a chunk can decode to fewer samples than its trailer counts."""
        e, i = pos
        if i < len(self._samples(e)):
            return pos
        ahead = range(e + 1, len(self._entries)) if direction > 0 else range(e - 1, -1, -1)
        behind = range(e - 1, -1, -1) if direction > 0 else range(e + 1, len(self._entries))
        for way, others in ((direction, ahead), (-direction, behind)):
            for k in others:
                n = len(self._samples(k))
                if n:
                    return (k, 0 if way > 0 else n - 1)
        n = len(self._samples(e))
        return (e, n - 1) if n else None

    def _index(self, pos: Pos) -> int:
        return self._cum[pos[0]] + pos[1]

    def _pos(self, index: int) -> Pos:
        index = max(0, min(index, len(self) - 1))
        e = bisect.bisect_right(self._cum, index) - 1
        return (e, index - self._cum[e])

    def _get(self, pos: Pos) -> RecordedSample | None:
        samples = self._samples(pos[0])
        return samples[pos[1]] if pos[1] < len(samples) else None

    def _prev(self, pos: Pos) -> Pos | None:
        e, i = pos
        if i > 0:
            return (e, i - 1)
        if e == 0:
            return None
        before, entry = self._entries[e - 1], self._entries[e]
        if before.file != entry.file or before.chunk != entry.chunk - 1:
            return None  # another file: the recorder was down in between
        return (e - 1, before.n - 1)

    def inventory_doc(self, wall: float) -> dict[str, Any]:
        """The recorded inventory document (devices and queue settings) in force at ``wall``
        (found by the chunk index alone: no sample is decoded)."""
        if not self._entries:
            return {}
        entry = self._entries[max(0, bisect.bisect_right(self._firsts, wall) - 1)]
        rec = self.files[entry.file]
        return rec.inventory_doc(rec.chunks[entry.chunk])

    def recorded(self, wall: float) -> RecordedSample | None:
        """The recorded sample at ``wall`` or just before (processes, pressure, events raw)."""
        pos = self._pos_at(wall)
        return self._get(pos) if pos is not None else None

    # --- frames ------------------------------------------------------------------------------

    def _inventory(self, e: int) -> tuple[Inventory, dict[str, int]]:
        entry = self._entries[e]
        rec = self.files[entry.file]
        chunk = rec.chunks[entry.chunk]
        key = (entry.file, chunk.inv_offset)
        got = self._inventories.get(key)
        if got is None:
            got = inventory_from_doc(rec.inventory_doc(chunk))
            self._inventories[key] = got
        return got

    def frame_between(self, prev: Pos | None, cur: Pos) -> Frame | None:
        """The frame of sample ``cur`` with rates since sample ``prev`` (None: no rates)."""
        now = self._get(cur)
        if now is None:
            return None
        before = None
        if prev is not None and self._entries[prev[0]].file == self._entries[cur[0]].file:
            before = self._get(prev)  # another file: the recorder was down in between
        inventory, nr = self._inventory(cur[0])
        changed = prev is None or (self._inventory(prev[0])[0] is not inventory)
        return recorded_frame(
            now,
            before,
            inventory,
            nr,
            changed=changed,
            seq=self._index(cur) + 1,
            chunk=self._samples(cur[0]),
            index=cur[1],
        )

    def _frame(self, pos: Pos) -> Frame | None:
        return self.frame_between(self._prev(pos), pos)

    # --- the Timeline protocol ---------------------------------------------------------------

    def span(self) -> tuple[float, float] | None:
        """Wall times of the first and last sample, or None while empty."""
        if not self._entries:
            return None
        return self._entries[0].first, max(e.last for e in self._entries[-3:])

    def _mark(self, wall: float) -> float | None:
        span = self.span()
        if span is None or self.interval is None:
            return None
        k = max(0, math.floor((min(wall, span[1]) - span[0]) / self.interval + 1e-9))
        return span[0] + k * self.interval

    def frame_at(self, wall: float) -> Frame | None:
        """The frame at ``wall`` or the last one before it (the first if ``wall`` is earlier)."""
        if self.interval is not None:
            mark = self._mark(wall)
            if mark is None:
                return None
            cur = self._pos_at(mark)
            if cur is None:
                return None
            span = self.span()
            prev = self._pos_at(mark - self.interval) if span and mark > span[0] else None
            if prev is not None and not self._contiguous(prev, cur):
                prev = None
            return self.frame_between(prev, cur)
        pos = self._pos_at(wall)
        return self._frame(pos) if pos is not None else None

    def _contiguous(self, a: Pos, b: Pos) -> bool:
        """Whether every sample from ``a`` to ``b`` is in one file (no restart between)."""
        return self._entries[a[0]].file == self._entries[b[0]].file and a != b

    def step(self, wall: float, n: int) -> Frame | None:
        """The frame ``n`` samples (or aggregation steps) after or before the one at ``wall``."""
        if self.interval is not None:
            mark = self._mark(wall)
            return None if mark is None else self.frame_at(mark + n * self.interval)
        pos = self._pos_at(wall)
        if pos is None:
            return None
        target = self._readable(self._pos(self._index(pos) + n), 1 if n >= 0 else -1)
        return self._frame(target) if target is not None else None

    def window(self, end: float, seconds: float) -> list[Frame]:
        """Frames with ``end - seconds < wall_time <= end``, oldest first."""
        if self.interval is not None:
            out: list[Frame] = []
            mark = self._mark(end)
            while mark is not None and mark > end - seconds:
                frame = self.frame_at(mark)
                if frame is not None and (not out or frame.seq != out[-1].seq):
                    out.append(frame)
                if mark - self.interval < (self.span() or (0.0, 0.0))[0] - 1e-9:
                    break
                mark -= self.interval
            return out[::-1]
        return [f for _, f in self.frames(end - seconds, end, inclusive_start=False)]

    def frames(
        self, start: float, end: float, *, inclusive_start: bool = True
    ) -> Iterator[tuple[RecordedSample, Frame]]:
        """Every recorded sample from ``start`` to ``end`` and its frame, oldest first."""
        first = max(0, bisect.bisect_right(self._firsts, start) - 1)
        for e in range(first, len(self._entries)):
            entry = self._entries[e]
            if entry.first > end:
                break
            if entry.last < start:
                continue
            for i, rs in enumerate(self._samples(e)):
                wall = rs.sample.wall_time
                if wall < start or (wall == start and not inclusive_start) or wall > end:
                    continue
                frame = self._frame((e, i))
                if frame is not None:
                    yield rs, frame

    def samples(
        self, start: float, end: float
    ) -> Iterator[tuple[RecordedSample, RecordedSample | None]]:
        """Every recorded sample from ``start`` to ``end`` with the sample before it in the
        same file (None for the first, or after a restart), oldest first; no frames built."""
        first = max(0, bisect.bisect_right(self._firsts, start) - 1)
        before: RecordedSample | None = None
        last: tuple[int, int] | None = None
        for e in range(first, len(self._entries)):
            entry = self._entries[e]
            if entry.first > end:
                break
            if entry.last < start:
                continue
            if last != (entry.file, entry.chunk - 1):
                before = None
            last = (entry.file, entry.chunk)
            for rs in self._samples(e):
                wall = rs.sample.wall_time
                if start <= wall <= end:
                    yield rs, before
                before = rs

    def json_records(
        self, start: float, end: float, kinds: frozenset[bytes] | None = None
    ) -> Iterator[tuple[float, dict[str, Any]]]:
        """Per sample with ``start <= wall <= end``, its wall time and its JSON records by type
        (events, pressure, frame parts; only ``kinds`` if given), read without decoding the
        counters."""
        for e in self._overlapping(start, end):
            entry = self._entries[e]
            for wall, docs in self.files[entry.file].json_records(entry.chunk, kinds):
                if start <= wall <= end:
                    yield wall, docs

    def rollups(self, start: float, end: float) -> Iterator[dict[str, Any]]:
        """The per-minute roll-ups of the closed chunks whose middle is in ``[start, end]``."""
        for e in self._overlapping(start, end):
            entry = self._entries[e]
            if start <= (entry.first + entry.last) / 2 <= end:
                doc = self.files[entry.file].rollup(entry.chunk)
                if doc:
                    yield doc

    def _overlapping(self, start: float, end: float) -> Iterator[int]:
        first = max(0, bisect.bisect_right(self._firsts, start) - 1)
        for e in range(first, len(self._entries)):
            entry = self._entries[e]
            if entry.first > end:
                break
            if entry.last >= start:
                yield e

    def pairs(
        self, start: float, end: float, interval: float | None
    ) -> Iterator[tuple[RecordedSample, RecordedSample, Frame]]:
        """(previous, current, frame) for every interval from ``start`` to ``end``.

        Without ``interval``: every recorded pair of consecutive samples of one file. With
        it: the samples at or before ``start``, ``start + S``, ... and the rates between them.
        A pair across a restart (two files) is left out.
        """
        if interval is None:
            prev: tuple[RecordedSample, Frame] | None = None
            for rs, frame in self.frames(start, end):
                if prev is not None and frame.elapsed_s is not None:
                    yield prev[0], rs, frame
                prev = (rs, frame)
            return
        a = self._pos_at(start)
        mark = start
        while a is not None and mark + interval <= end + 1e-9:
            mark += interval
            b = self._pos_at(mark)
            if b is None:
                continue
            if b == a:  # no sample in this interval: skip to the mark that reaches the next
                nxt = self._pos(self._index(a) + 1)
                got = self._get(nxt) if nxt != a else None
                if got is None:
                    break
                if got.sample.wall_time <= mark:  # files that overlap in time
                    continue
                k = math.ceil((got.sample.wall_time - start) / interval - 1e-9)
                mark = max(mark, start + (k - 1) * interval)
                continue
            pair = self.frame_between(a, b) if self._contiguous(a, b) else None
            first, second = self._get(a), self._get(b)
            if pair is not None and pair.elapsed_s and first is not None and second is not None:
                yield first, second, pair
            a = b


def open_timeline(
    path: str | os.PathLike[str],
    *,
    interval: float | None = None,
    follow: bool = False,
    warn: Callable[[str], object] | None = None,
) -> RecordingTimeline:
    """A timeline over one recording file, a bundle, or a directory of daily files.

    Raises:
        FormatError: not a recording, a newer format version, or an empty directory.
        OSError: the path cannot be read.
    """
    warn = warn or (lambda _line: None)
    target = Path(path)
    if target.is_dir():
        files = []
        skipped: dict[str, int] = {}
        for name in recording_files(target, every_kind=True):
            rec = open_skipping(name, warn, skipped, follow=follow)
            if rec is not None:
                files.append(rec)
        if not files:
            raise FormatError(f"{target}: no readable recordings in this directory")
        timeline = RecordingTimeline(files, interval=interval, directory=target, warn=warn)
        timeline._skipped = skipped
        return timeline
    rec = RecordingFile(target, warn, follow=follow)
    return RecordingTimeline([rec], interval=interval, warn=warn)


def open_skipping(
    path: Path, warn: Callable[[str], object], skipped: dict[str, int], *, follow: bool
) -> RecordingFile | None:
    """One file of a directory, or None with one warning naming it (the rest is still read).

    A file already skipped is tried again only when its size changed, and warned about once.
    """
    key = os.fspath(path)
    try:
        size = os.lstat(path).st_size
    except OSError:
        size = -1
    if skipped.get(key) == size:
        return None
    try:
        return RecordingFile(path, warn, follow=follow)
    except (FormatError, OSError) as exc:
        if key not in skipped:
            text = str(exc) if isinstance(exc, FormatError) else f"{key}: {exc.strerror or exc}"
            warn(f"{text}; skipped it, read the other files")
        skipped[key] = size
        return None
