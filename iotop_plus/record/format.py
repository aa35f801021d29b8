"""The recording format (version 4): frames, chunks and records.

The byte layout is documented in ``docs/recording-format.md``; this module is its one
implementation. A file is::

    MAGIC (8 bytes) | u16 version | u16 flags | u32 reserved
    frame*                      each: type (1 byte) | u32 payload length | u32 CRC32 | payload

Frame types: ``H`` header (zlib JSON), ``I`` inventory change (zlib JSON), ``S`` the disk part
of one sample and ``X`` the rest of it (processes, pressure, events), both pieces of the
chunk's one raw-deflate stream, each ended by ``Z_SYNC_FLUSH``; ``T`` the chunk trailer (index
facts, the stream's CRC32, the per-minute roll-ups), which ends with its own length and
:data:`TRAILER_MAGIC` so the index can be read backwards from the end of the file.

Inside the stream, records are ``u32 length | type (1 byte) | body``: ``K`` keyframe (absolute
counters), ``D`` delta (predicted residuals), ``P`` processes, ``R`` pressure, ``E`` events
(the last three JSON, belonging to the sample before them), and JSON frame parts under the
types of :data:`part_kinds`. The disk records' codec is :mod:`iotop_plus.record.predict`; files
of versions 1 to 3 are read through :mod:`iotop_plus.record.upgrade`.
"""

from __future__ import annotations

import itertools
import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iotop_plus.sampling.disks.diskstats import (
    N_COUNTERS,
    DiskCounters,
)
from iotop_plus.sampling.frame import registry

MAGIC = b"IOTPLREC"
"""The first 8 bytes of every recording and bundle."""
VERSION = 4
"""The format version this code writes, and the newest it reads (files of versions 1 to 3 are
read through :mod:`iotop_plus.record.upgrade`)."""
PART_KINDS = frozenset("CHLMNQW")
"""Record types of the JSON frame parts (:attr:`RecordedSample.parts`):
``C`` cgroups, ``H`` device health, ``L`` cgroup limits, ``M`` memory (dirty, writeback),
``N`` command lines of new pids, ``Q`` latency histograms per device, ``W`` issuers per
device. Readers keep any other unknown
type out of the sample, so later parts need no new version. The registered frame parts add
theirs (:func:`part_kinds`)."""
SAMPLE_RECORDS = frozenset("DEKPR")
"""Record types of a sample's own records (counters, processes, pressure, events): no frame
part may take one."""
_kinds: tuple[object, frozenset[str]] | None = None


def part_kinds() -> frozenset[str]:
    """:data:`PART_KINDS` and the letters of the registered frame parts (:mod:`~iotop_plus.
    sampling.registry`); a part whose letter is a sample's own record type is left out."""
    global _kinds
    parts = registry.parts()
    if _kinds is None or _kinds[0] is not parts:
        letters = {p.letter for p in parts if p.letter is not None and len(p.letter) == 1}
        _kinds = (parts, PART_KINDS | frozenset(letters - SAMPLE_RECORDS))
    return _kinds[1]


FILE_PREFIX = struct.Struct("<8sHHI")
FRAME = struct.Struct("<cII")
"""Frame header: type, payload length, CRC32 of the payload."""
TRAILER = struct.Struct("<QQqqII")
"""Trailer fixed part: chunk start, inventory offset, first/last wall ns, samples, stream CRC."""
TRAILER_END = struct.Struct("<I4s")
"""The last 8 bytes of a trailer frame: the frame's whole length and :data:`TRAILER_MAGIC`."""
TRAILER_MAGIC = b"IPT1"
RECORD = struct.Struct("<Ic")
TIMES = struct.Struct("<qq")
MAX_INFLATED_FRAME = 16 * 1024 * 1024
"""A frame's payload decompresses to at most this (a header, an inventory, one sample)."""
MAX_INFLATED_CHUNK = 256 * 1024 * 1024
"""A chunk's stream decompresses to at most this, all its frames together."""
MAX_FRAME = MAX_INFLATED_FRAME + 64 * 1024
"""A frame's payload is never longer than what it decompresses to (plus deflate's few bytes
of framing): a longer one is corruption or hostile, not data."""
MAX_JSON_DEPTH = 64
"""JSON nested deeper than this is refused (Python's parser and printers recurse)."""
MAX_DEVICES = 100_000
"""A disk record of more devices than this is refused (each costs 17 counters in memory)."""
MAX_WALL_NS = 7_258_118_400 * 10**9
"""2200-01-01 UTC: a recorded wall time past it (or before 1970) is corruption."""


class FormatError(Exception):
    """A file that is not a recording, or one this version cannot read; one line."""


def crc(data: bytes) -> int:
    """CRC32 as every frame and stream uses it."""
    return zlib.crc32(data) & 0xFFFFFFFF


def frame(kind: bytes, payload: bytes) -> bytes:
    """One frame: header and payload."""
    return FRAME.pack(kind, len(payload), crc(payload)) + payload


def file_prefix() -> bytes:
    """The 16 bytes that start a file."""
    return FILE_PREFIX.pack(MAGIC, VERSION, 0, 0)


def check_prefix(data: bytes, name: str) -> int:
    """The version of a file from its first 16 bytes.

    Raises:
        FormatError: not a recording, or a newer version than this code reads.
    """
    if len(data) < FILE_PREFIX.size or data[:8] != MAGIC:
        raise FormatError(f"{name}: not an iotop-plus recording")
    _, version, _, _ = FILE_PREFIX.unpack_from(data)
    if version > VERSION:
        raise FormatError(
            f"{name}: recording format version {version} is newer than this iotop-plus "
            f"reads (version {VERSION}); upgrade iotop-plus to read it"
        )
    if version < 1:
        raise FormatError(f"{name}: bad recording format version {version}")
    return int(version)


def json_blob(doc: Any) -> bytes:
    """zlib-compressed compact JSON (headers, inventories, roll-ups)."""
    return zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 6)


def inflate(data: bytes, limit: int = MAX_INFLATED_FRAME, wbits: int = zlib.MAX_WBITS) -> bytes:
    """``zlib.decompress`` that never makes more than ``limit`` bytes (a bomb stops there).

    Raises:
        ValueError: not zlib data, cut short, or more than ``limit`` bytes.
    """
    d = zlib.decompressobj(wbits)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ValueError(f"does not decompress ({exc})") from None
    if len(out) > limit:
        raise ValueError(f"decompresses to more than {limit >> 20} MiB")
    if not d.eof:
        raise ValueError("compressed data cut short")
    return out


_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def json_depth(data: bytes) -> int:
    """How deep the brackets of the JSON text ``data`` nest, strings left out.

    Linear whatever the bytes, in C but for the last step, and with a copy or two of the data
    at most: escaped backslashes then escaped quotes are dropped (as a JSON reader pairs a
    backslash with the byte after it), then every byte but brackets and quotes; what lies
    between a quote and the next is a string's (an unterminated string runs to the end); the
    depth is the highest running sum of the brackets left.
    """
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = unescaped.translate(None, _NOT_STRUCTURE)
    brackets = b"".join(kept.split(b'"')[::2])
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


def load_json(data: bytes) -> Any:
    """``json.loads`` of untrusted UTF-8 bytes, refusing nesting deeper than
    :data:`MAX_JSON_DEPTH`.

    Only UTF-8 is taken (``json.loads`` would guess UTF-16 or 32 from the bytes, whose
    quotes and brackets the depth check does not see). Time and memory are linear in the size.

    Raises:
        ValueError: not UTF-8 JSON, or nested too deep.
    """
    text = data.decode()  # UnicodeDecodeError is a ValueError
    if data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH and json_depth(data) > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ValueError("JSON nested too deep") from None


def load_blob(data: bytes) -> Any:
    """The inverse of :func:`json_blob`, bounded: at most :data:`MAX_INFLATED_FRAME` bytes of
    JSON at most :data:`MAX_JSON_DEPTH` deep.

    Raises:
        ValueError: not zlib JSON, too big, or too deep (one line).
    """
    return load_json(inflate(data))


def trailer_payload(
    start: int, inv_offset: int, first_ns: int, last_ns: int, n: int, stream_crc: int, rollup: bytes
) -> bytes:
    """A trailer frame's payload, whose last 8 bytes let a reader find the frame from the end."""
    body = TRAILER.pack(start, inv_offset, first_ns, last_ns, n, stream_crc) + rollup
    total = FRAME.size + len(body) + TRAILER_END.size
    return body + TRAILER_END.pack(total, TRAILER_MAGIC)


# --- disk records ----------------------------------------------------------------------------


@dataclass
class Layout:
    """The devices of a run of records, in record order."""

    names: tuple[str, ...]
    majors: tuple[int, ...]
    minors: tuple[int, ...]
    n_fields: tuple[int, ...]

    @classmethod
    def of(cls, counters: Sequence[DiskCounters]) -> Layout:
        """The layout of a sample's counters."""
        return cls(
            tuple(c.name for c in counters),
            tuple(c.major for c in counters),
            tuple(c.minor for c in counters),
            tuple(c.n_fields for c in counters),
        )

    def as_json(self) -> list[list[Any]]:
        """``[[name, major, minor, n_fields], ...]``."""
        return [
            list(t) for t in zip(self.names, self.majors, self.minors, self.n_fields, strict=False)
        ]

    @classmethod
    def from_json(cls, rows: Any) -> Layout:
        """The inverse of :meth:`as_json`; raises ValueError on a malformed list."""
        if not isinstance(rows, list) or len(rows) > MAX_DEVICES:
            raise ValueError("bad device layout")
        names, majors, minors, fields = [], [], [], []
        for row in rows:
            if not isinstance(row, list) or len(row) != 4:
                raise ValueError("bad device layout")
            name, major, minor, n = row
            if not isinstance(name, str) or not all(
                type(v) is int and 0 <= v < 2**32 for v in (major, minor, n)
            ):
                raise ValueError("bad device layout")
            names.append(name)
            majors.append(major)
            minors.append(minor)
            fields.append(n)
        return cls(tuple(names), tuple(majors), tuple(minors), tuple(fields))


def counters_columns(counters: Sequence[DiskCounters]) -> list[list[int]]:
    """The 17 columns (one list per counter) of a sample's counters, in record order."""
    if not counters:
        return [[] for _ in range(N_COUNTERS)]
    return [list(col) for col in zip(*(c.values for c in counters), strict=False)]


def columns_counters(layout: Layout, columns: list[list[int]]) -> dict[str, DiskCounters]:
    """The counters of a decoded sample, by name."""
    if not layout.names:
        return {}
    rows = zip(*columns, strict=False)
    return {
        name: DiskCounters(major, minor, name, values, n)
        for name, major, minor, n, values in zip(
            layout.names, layout.majors, layout.minors, layout.n_fields, rows, strict=False
        )
    }


def record(kind: bytes, body: bytes) -> bytes:
    """One record inside the chunk stream."""
    return RECORD.pack(len(body), kind) + body
