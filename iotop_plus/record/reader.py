"""Reading one recording file: its index of chunks, and the samples of any chunk.

Opening reads the header and walks the chunk trailers backwards from the end (one small read
per minute of recording), so a 24-hour file opens without decoding it. Where the end is not a
trailer (the recorder is still writing, or was killed), the chunk in progress is read frame by
frame up to its last complete sample. A torn or corrupt tail is skipped with one warning; a
corrupt chunk in the middle is skipped the same way and the chunks after it are still read.
"""

from __future__ import annotations

import errno
import itertools
import math
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from iotop_plus.record import upgrade
from iotop_plus.record.chunks import ROLLUP_METRICS, ROLLUP_STATS, RecordedSample
from iotop_plus.record.format import (
    FILE_PREFIX,
    FRAME,
    MAX_FRAME,
    MAX_WALL_NS,
    TIMES,
    TRAILER,
    TRAILER_END,
    TRAILER_MAGIC,
    FormatError,
    check_prefix,
    crc,
    load_blob,
    load_json,
)
from iotop_plus.record.stream import (
    MAX_CHUNK_COST,
    MAX_JSON_RECORD,
    Decoded,
    StreamBound,
    Uninflatable,
    decode_stream,
    json_cost,
    stream_records,
)
from iotop_plus.roots import open_regular

_TAIL_SCAN = 8 * 1024 * 1024
"""How far back from the end a reader looks for the last trailer before reading every frame."""

_TEXT = (str,)
_INT = (int,)
_NUMBER = (int, float)
#: Header keys and the JSON types their values must have (others are ignored, as documented).
HEADER_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "format": (_TEXT, "text"),
    "tool_version": (_TEXT, "text"),
    "host": (_TEXT, "text"),
    "kernel": (_TEXT, "text"),
    "zone": (_TEXT, "text"),
    "utc_offset_s": (_INT, "a whole number of seconds"),
    "started_ns": (_INT, "a whole number of nanoseconds"),
    "interval_s": (_NUMBER, "a number of seconds"),
    "pid": (_INT, "a whole number"),
    "seq": (_INT, "a whole number"),
    "version": (_INT, "a whole number"),
    "inventory": ((list,), "a list"),
    "queue": ((dict,), "an object"),
    "bundle": ((dict,), "an object"),
    "journal": ((list,), "a list"),
    "probes": ((list,), "a list"),
}
_LIMITS: dict[str, tuple[float, float]] = {
    "utc_offset_s": (-86_400, 86_400),
    "started_ns": (0, MAX_WALL_NS),
    "interval_s": (1e-3, 86_400 * 366),
    "pid": (0, 2**32),
    "seq": (0, 10**12),
    "version": (0, 2**16),
}


MAX_CACHED_COST = 3 * MAX_CHUNK_COST // 2
"""What the decoded chunks kept for reuse, of every open file together, may take (96 MiB, as
:func:`~iotop_plus.record.stream.decode_stream` estimates it)."""
MAX_CACHED_CHUNKS = 64
"""Decoded chunks kept for reuse, at most."""


class _ChunkCache:
    """Decoded chunks of every open file, least recently used dropped first past
    :data:`MAX_CACHED_COST` or :data:`MAX_CACHED_CHUNKS` (the newest is always kept)."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[int, int], Decoded] = OrderedDict()
        self._cost = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[int, int]) -> Decoded | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[int, int], samples: Decoded) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            self._cost += samples.cost - (old.cost if old is not None else 0)
            self._items[key] = samples
            while len(self._items) > 1 and (
                self._cost > MAX_CACHED_COST or len(self._items) > MAX_CACHED_CHUNKS
            ):
                _, dropped = self._items.popitem(last=False)
                self._cost -= dropped.cost

    def drop(self, owner: int) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == owner]:
                self._cost -= self._items.pop(key).cost


_CACHE = _ChunkCache()
_OWNERS = itertools.count()


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def check_header(doc: object, name: str) -> dict[str, Any]:
    """The header document, once every value the readers use has its documented type.

    Raises:
        FormatError: one line naming the key, what it holds and what it should hold.
    """
    if not isinstance(doc, dict):
        raise FormatError(f"{name}: the recording's header is {_json_kind(doc)}, not an object")
    for key, (types, want) in HEADER_TYPES.items():
        if key not in doc or (doc[key] is None and key not in ("interval_s", "seq", "version")):
            continue
        value = doc[key]
        if isinstance(value, bool) or not isinstance(value, types):
            raise FormatError(
                f"{name}: the header's {key!r} is {_json_kind(value)}, not {want}; "
                "the file is corrupt or not from iotop-plus"
            )
        low, high = _LIMITS.get(key, (-math.inf, math.inf))
        if isinstance(value, (int, float)) and not low <= value <= high:
            raise FormatError(
                f"{name}: the header's {key!r} is out of range ({str(value)[:30]}); "
                "the file is corrupt or not from iotop-plus"
            )
    return doc


def checked_inventory(doc: object) -> dict[str, Any]:
    """An inventory document (``inventory`` list, ``queue`` object) with anything of the
    wrong shape left out."""
    if not isinstance(doc, dict):
        return {}
    out = dict(doc)
    if not isinstance(out.get("inventory"), list):
        out.pop("inventory", None)
    if not isinstance(out.get("queue"), dict):
        out.pop("queue", None)
    return out


@dataclass
class Chunk:
    """One chunk of the index."""

    start: int
    """Offset of its first frame."""
    end: int
    """Offset just past its last frame (its trailer, when closed)."""
    inv_offset: int
    """Offset of the ``H`` or ``I`` frame whose inventory applies."""
    first_ns: int
    """Wall time of its first sample (UTC ns)."""
    last_ns: int
    """Wall time of its last sample (UTC ns)."""
    n: int
    """Samples in it."""
    trailer: int | None = None
    """Offset of its trailer; None for the chunk still being written (or cut short)."""
    samples: list[RecordedSample] | None = field(default=None, repr=False)
    """The decoded samples of an open chunk (closed ones are decoded on demand)."""


class RecordingFile:
    """One recording (or bundle) file, opened for reading.

    Args:
        path: The file.
        warn: Receives each one-line warning (a torn tail, a corrupt chunk).

    Raises:
        FormatError: not a recording, or a newer format version.
        OSError: the file cannot be opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        warn: Callable[[str], object] | None = None,
        *,
        follow: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.follow = follow
        """A recorder may still be writing: a cut-short last frame is expected, not warned."""
        self.warn = warn or (lambda _line: None)
        try:
            self._fd = open_regular(self.path)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket or a FIFO that refused O_NONBLOCK
                raise FormatError(f"{self.path}: not a regular file") from None
            raise
        try:
            prefix = os.pread(self._fd, FILE_PREFIX.size, 0)
            self.version = check_prefix(prefix, self.path)
            pos = FILE_PREFIX.size
            got = self._frame_at(pos, os.fstat(self._fd).st_size)
            if got is None or got[0] != b"H":
                raise FormatError(f"{self.path}: the recording's header is missing or corrupt")
            try:
                doc = load_blob(got[1])
            except ValueError as exc:
                raise FormatError(f"{self.path}: the recording's header {exc}") from None
            self.header: dict[str, Any] = check_header(doc, self.path)
            self.header_end = pos + FRAME.size + len(got[1])
        except BaseException:
            os.close(self._fd)
            raise
        self.chunks: list[Chunk] = []
        self._inventories: dict[int, dict[str, Any]] = {FILE_PREFIX.size: self.header}
        self._scanned_to = self.header_end
        self._warned_tail = False
        self._owner = next(_OWNERS)
        self._index()

    def close(self) -> None:
        """Close the file."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        _CACHE.drop(self._owner)

    # --- frames ----------------------------------------------------------------------------------

    def _frame_at(self, pos: int, size: int) -> tuple[bytes, bytes] | None:
        """``(type, payload)`` of a whole, intact frame at ``pos``; None if torn or corrupt."""
        if pos + FRAME.size > size:
            return None
        head = os.pread(self._fd, FRAME.size, pos)
        if len(head) < FRAME.size:  # the file shrank under us
            return None
        kind, length, want = FRAME.unpack(head)
        if length > MAX_FRAME or pos + FRAME.size + length > size:
            return None
        payload = os.pread(self._fd, length, pos + FRAME.size)
        if len(payload) != length or crc(payload) != want:
            return None
        return kind, payload

    def _trailer_before(self, end: int, size: int) -> tuple[int, bytes] | None:
        """The trailer frame that ends at ``end``: its offset and payload, when intact."""
        if end - TRAILER_END.size < self.header_end:
            return None
        tail = os.pread(self._fd, TRAILER_END.size, end - TRAILER_END.size)
        if len(tail) < TRAILER_END.size:
            return None
        total, magic = TRAILER_END.unpack(tail)
        if magic != TRAILER_MAGIC or total > MAX_FRAME or end - total < self.header_end:
            return None
        got = self._frame_at(end - total, size)
        if got is None or got[0] != b"T" or end - total + FRAME.size + len(got[1]) != end:
            return None
        if self._chunk_of(end - total, got[1]) is None:
            return None
        return end - total, got[1]

    def _chunk_of(self, offset: int, payload: bytes) -> Chunk | None:
        """The chunk a trailer at ``offset`` describes; None when its facts cannot be true
        (offsets outside the file or not before the trailer, times out of range)."""
        if len(payload) < TRAILER.size + TRAILER_END.size:
            return None
        start, inv, first, last, n, _ = TRAILER.unpack_from(payload)
        if not (
            self.header_end <= start < offset
            and FILE_PREFIX.size <= inv <= start
            and 0 <= first <= last <= MAX_WALL_NS
            and n > 0
        ):
            return None
        return Chunk(start, offset + FRAME.size + len(payload), inv, first, last, n, offset)

    # --- the index ------------------------------------------------------------------------------

    def _index(self) -> None:
        size = os.fstat(self._fd).st_size
        closed_end = self._find_last_trailer(size)
        chain: list[Chunk] = []
        end = closed_end
        while end > self.header_end:
            got = self._trailer_before(end, size)
            if got is None:
                chain = []
                break
            chunk = self._chunk_of(*got)
            assert chunk is not None  # _trailer_before checked it
            chain.append(chunk)
            end = chunk.start
            if self._inventory_frame_ends_at(chunk.inv_offset, end):
                end = chunk.inv_offset
        if chain or closed_end == self.header_end:
            self.chunks = chain[::-1]
            self._scanned_to = closed_end
        else:  # the backward walk broke: read every frame from the header on
            self.chunks = []
            self._scanned_to = self.header_end
        self.refresh()

    def _inventory_frame_ends_at(self, offset: int, end: int) -> bool:
        """Whether an ``I`` frame at ``offset`` ends exactly at ``end`` (before its chunk)."""
        if not self.header_end <= offset < end:
            return False
        head = os.pread(self._fd, FRAME.size, offset)
        if len(head) < FRAME.size:
            return False
        kind, length, _ = FRAME.unpack(head)
        return bool(kind == b"I" and offset + FRAME.size + length == end)

    def _find_last_trailer(self, size: int) -> int:
        """Offset just past the last intact trailer near the end (the header's end if none)."""
        if self._trailer_before(size, size) is not None:
            return size
        lo = max(self.header_end, size - _TAIL_SCAN)
        tail = os.pread(self._fd, size - lo, lo)
        pos = len(tail)
        while True:
            pos = tail.rfind(TRAILER_MAGIC, 0, pos)
            if pos < 0:
                return self.header_end
            end = lo + pos + len(TRAILER_MAGIC)
            if self._trailer_before(end, size) is not None:
                return end

    def refresh(self) -> bool:
        """Read what was appended since the last look (follow mode); True if samples came."""
        size = os.fstat(self._fd).st_size
        if self.chunks and self.chunks[-1].trailer is None:
            open_chunk = self.chunks.pop()  # re-read the chunk in progress from its start
            self._scanned_to = open_chunk.start
        before = sum(c.n for c in self.chunks)
        while self._scan(size):  # a corrupt chunk was skipped: read on from past it
            pass
        return sum(c.n for c in self.chunks) > before

    def _scan(self, size: int) -> bool:
        """Read frames from where the last scan stopped; True if it skipped a corrupt chunk
        and there is more to read."""
        pos = self._scanned_to
        start = pos
        inv = self.chunks[-1].inv_offset if self.chunks else FILE_PREFIX.size
        pieces: list[bytes] = []
        torn = False
        while pos < size:
            got = self._frame_at(pos, size)
            chunk = None
            if got is not None and got[0] == b"T":
                chunk = self._chunk_of(pos, got[1])
                if chunk is None or chunk.start != start:
                    got = None  # a trailer whose facts are false: corrupt
            if got is None:
                torn = True
                break
            kind, payload = got
            nxt = pos + FRAME.size + len(payload)
            if kind == b"T":
                assert chunk is not None
                self.chunks.append(chunk)
                pieces, start = [], nxt
            elif kind == b"I":
                inv, start = pos, nxt
                self._inventories[pos] = self._inventory_of(pos, payload)
            elif kind in (b"S", b"X"):
                pieces.append(payload)
            pos = nxt
        self._scanned_to = start
        if torn and pos < size:
            resync = self._resync(pos, size)
            if resync is not None:
                self.warn(f"{self.path}: corrupt data at byte {pos:,}; skipped to byte {resync:,}")
                self._scanned_to = resync
                return True
            if not self._warned_tail and not self.follow:
                self._warned_tail = True
                self.warn(
                    f"{self.path}: the last {size - pos:,} bytes are cut short or corrupt; "
                    "read everything before them"
                )
        if pieces:
            samples = decode_stream(pieces, self.path, self.warn, self.version)
            if samples:
                first, last = samples[0].sample.wall_time, samples[-1].sample.wall_time
                chunk = Chunk(start, pos, inv, round(first * 1e9), round(last * 1e9), len(samples))
                chunk.samples = samples
                self.chunks.append(chunk)
        return False

    def _resync(self, pos: int, size: int) -> int | None:
        """Offset just past the next intact trailer after ``pos`` (skipping a corrupt chunk)."""
        at = pos
        while True:
            data = os.pread(self._fd, min(_TAIL_SCAN, size - at), at)
            hit = data.find(TRAILER_MAGIC)
            if hit < 0:
                if at + len(data) >= size or len(data) <= len(TRAILER_MAGIC):
                    return None
                at += len(data) - len(TRAILER_MAGIC)
                continue
            end = at + hit + len(TRAILER_MAGIC)
            if self._trailer_before(end, size) is not None:
                return end
            at = at + hit + 1

    # --- samples --------------------------------------------------------------------------------

    def _inventory_of(self, offset: int, payload: bytes) -> dict[str, Any]:
        try:
            return checked_inventory(load_blob(payload))
        except ValueError as exc:
            self.warn(f"{self.path}: the device inventory at byte {offset:,} {exc}; not used")
            return {}

    def inventory_doc(self, chunk: Chunk) -> dict[str, Any]:
        """The inventory document (header or ``I`` frame) that applies to ``chunk``."""
        doc = self._inventories.get(chunk.inv_offset)
        if doc is None:
            got = self._frame_at(chunk.inv_offset, os.fstat(self._fd).st_size)
            ok = got is not None and got[0] in (b"I", b"H")
            doc = self._inventory_of(chunk.inv_offset, got[1]) if got is not None and ok else {}
            self._inventories[chunk.inv_offset] = doc
        return doc

    def samples(self, i: int) -> list[RecordedSample]:
        """The samples of chunk ``i``, decoded (kept for the chunks last asked for, within
        :data:`MAX_CACHED_COST`)."""
        chunk = self.chunks[i]
        if chunk.samples is not None:
            return chunk.samples
        cached = _CACHE.get((self._owner, chunk.start))
        if cached is not None:
            return cached
        pieces = self._pieces(chunk)
        samples = decode_stream(pieces, self.path, self.warn, self.version) if pieces else Decoded()
        _CACHE.put((self._owner, chunk.start), samples)
        return samples

    def _pieces(self, chunk: Chunk) -> list[bytes]:
        """The stream pieces (``S`` and ``X`` payloads) of ``chunk``; none when corrupt."""
        size = os.fstat(self._fd).st_size
        pieces: list[bytes] = []
        pos = chunk.start
        end = chunk.trailer if chunk.trailer is not None else chunk.end
        while pos < end:
            got = self._frame_at(pos, size)
            if got is None:
                self.warn(f"{self.path}: a corrupt chunk at byte {pos:,} was skipped")
                return []
            if got[0] in (b"S", b"X"):
                pieces.append(got[1])
            pos += FRAME.size + len(got[1])
        return pieces

    def json_records(
        self, i: int, kinds: frozenset[bytes] | None = None
    ) -> Iterator[tuple[float, dict[str, Any]]]:
        """Per sample of chunk ``i``, its wall time and its JSON records by type (``E``
        events, ``R`` pressure, the frame parts), read without decoding the counters: the
        disk records give only their times. Within the stream's bounds (a record over
        :data:`~iotop_plus.record.stream.MAX_JSON_RECORD`, or past
        :data:`~iotop_plus.record.stream.MAX_CHUNK_COST` for one sample, is left out; a
        malformed chunk gives the samples before the fault). ``kinds``: only these record
        types are read."""
        chunk = self.chunks[i]
        if chunk.samples is not None:
            for rs in chunk.samples:
                docs = dict(rs.parts)
                docs.update({"E": list(rs.events), "R": rs.pressure})
                yield rs.sample.wall_time, docs
            return
        ns = cost = 0
        current: dict[str, Any] | None = None
        try:
            for kind, body in stream_records(self._pieces(chunk)):
                if kind in (b"K", b"D"):
                    if current is not None:
                        yield ns / 1e9, current
                    current, cost = {}, 0
                    if kind == b"K":
                        (length,) = struct.unpack_from("<I", body)
                        head = load_json(body[4 : 4 + length])
                        ns = head.get("wall_ns", 0) if isinstance(head, dict) else 0
                        ns = ns if type(ns) is int and 0 <= ns <= MAX_WALL_NS else 0
                    else:
                        ns += TIMES.unpack_from(body)[0]
                elif (
                    current is not None
                    and kind != b"P"
                    and (kinds is None or kind in kinds)
                    and len(body) <= MAX_JSON_RECORD
                    and cost + json_cost(body) <= MAX_CHUNK_COST
                ):
                    cost += json_cost(body)
                    current[kind.decode("latin-1")] = load_json(body)
        except (StreamBound, Uninflatable, ValueError, struct.error) as exc:
            self.warn(f"{self.path}: a chunk could not all be read ({str(exc)[:120]})")
        if current is not None:
            yield ns / 1e9, current

    def rollup(self, i: int) -> dict[str, Any]:
        """The per-minute roll-up stored with chunk ``i``: ``{"devices": [...], "seconds": S,
        METRIC: {"min": [...], "max": [...], "mean": [...]}}`` for each of
        :data:`ROLLUP_METRICS`, whatever the file's version (read through
        :func:`~iotop_plus.record.upgrade.rollup`); empty for an open chunk, or one
        whose trailer cannot be read.
        """
        chunk = self.chunks[i]
        if chunk.trailer is None:
            return {}
        got = self._frame_at(chunk.trailer, os.fstat(self._fd).st_size)
        if got is None:
            return {}
        try:
            doc = load_blob(got[1][TRAILER.size : -TRAILER_END.size])
            return normalized_rollup(upgrade.rollup(self.version, doc))
        except (ValueError, TypeError, OverflowError):  # CRC-valid but not ours
            return {}


def normalized_rollup(doc: object) -> dict[str, Any]:
    """A stored roll-up (of an older version, as :func:`~iotop_plus.record.upgrade.rollup`
    gives it), its figures as floats; empty when it is not a roll-up of its device list."""
    if not isinstance(doc, dict) or not isinstance(doc.get("devices"), list):
        return {}
    n = len(doc["devices"])
    if not all(isinstance(d, str) for d in doc["devices"]):
        return {}
    out: dict[str, Any] = {"devices": list(doc["devices"])}
    out["seconds"] = float(doc.get("seconds") or 0)
    if not math.isfinite(out["seconds"]) or out["seconds"] < 0:
        return {}
    for m in ROLLUP_METRICS:
        got = doc.get(m)
        if got is None and not out["seconds"]:
            continue  # a chunk of one sample has no intervals to roll up
        if not isinstance(got, dict) or any(
            not isinstance(got.get(key), list) or len(got[key]) != n for key in ROLLUP_STATS
        ):
            return {}
        figures = {key: [float(x) for x in got[key]] for key in ROLLUP_STATS}
        if not all(math.isfinite(x) for values in figures.values() for x in values):
            return {}
        out[m] = figures
    return out
