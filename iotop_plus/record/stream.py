"""Decoding one chunk's stream into samples, within bounds on time and memory.

A chunk's ``S`` and ``X`` frames are pieces of one raw-deflate stream of records (see
:mod:`iotop_plus.record.format`). The pieces are inflated one at a time and their records
decoded as they come, so the stream is never held whole. Every bound below is met by any file
the recorder writes; a file past one is cut there, with one line naming the bound, and the
samples before the cut are kept:

- each piece inflates to at most :data:`~iotop_plus.record.format.MAX_INFLATED_FRAME`, the
  chunk to at most :data:`~iotop_plus.record.format.MAX_INFLATED_CHUNK`;
- a record is at most one frame long, and never empty (the recorder writes none);
- at most :data:`MAX_RECORDS_PER_FRAME` records for each frame of the chunk;
- a JSON record (processes, pressure, events, a frame part) is at most :data:`MAX_JSON_RECORD`
  bytes;
- what the chunk's samples take in memory, estimated by :func:`json_cost` and
  :data:`READING_COST`, stays under :data:`MAX_CHUNK_COST` (its first sample is always kept).

A frame part is kept to what its sample can show (:func:`bounded_part`): its per-device maps
to the sample's devices, its lists to as many entries as the recorder writes. What a frame
is built from then costs in proportion to the sample, however large the part was.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import RecordedSample, bits_float
from iotop_plus.record.format import (
    MAX_INFLATED_CHUNK,
    MAX_INFLATED_FRAME,
    MAX_WALL_NS,
    RECORD,
    TIMES,
    VERSION,
    Layout,
    columns_counters,
    load_json,
    part_kinds,
)
from iotop_plus.record.predict import elapsed_ms_of
from iotop_plus.record.upgrade import DiskRecords, disk_decoder
from iotop_plus.sampling.cgroups.active import KEPT_CGROUPS
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.processes.issuers import TOP

MAX_RECORDS_PER_FRAME = 64
"""Records a chunk may hold for each of its ``S``/``X`` frames (a sample's frames hold one
disk record and at most a dozen JSON records)."""
MAX_JSON_RECORD = 4 << 20
"""A JSON record longer than this (4 MiB) is left out of its sample."""
MAX_CHUNK_COST = 64 << 20
"""The estimated memory (64 MiB) a chunk's decoded samples may take."""
READING_COST = 1024
"""Estimated bytes one device's counters take in a decoded sample (17 integers, their tuple
and the :class:`~iotop_plus.sampling.disks.diskstats.DiskCounters`; about 970 measured)."""
MAX_PART_ENTRIES = 1000
"""Limited cgroups a recorded ``L`` part is read for, at most."""
MAX_COMMAND_LINES = 256
"""Command lines a recorded ``N`` part is read for, at most (the recorder writes those of the
sample's new pids: its top processes and issuers)."""
_JSON_TEXT = (b"P", b"R", b"E")


class StreamBound(ValueError):
    """A chunk's stream goes past a bound; the samples before it are kept."""


class Uninflatable(ValueError):
    """A piece of a chunk's stream does not decompress, or inflates past a bound."""


class Decoded(list[RecordedSample]):
    """A chunk's samples, and the memory they are estimated to take (:attr:`cost`)."""

    cost: int = 0


def json_cost(data: bytes) -> int:
    """An upper estimate of the memory ``json.loads(data)`` takes: 16 bytes a byte of text
    (numbers and short strings) and 48 more per object or list (``[{},{}]`` costs 24 bytes
    a byte of text once parsed)."""
    return 16 * len(data) + 48 * (data.count(b"{") + data.count(b"["))


def inflate_stream(pieces: list[bytes]) -> bytes:
    """A chunk's whole stream bytes from its frames' pieces, within the inflation bounds.

    Raises:
        Uninflatable: one line saying which limit, or that it does not decompress.
    """
    return b"".join(inflated_pieces(pieces))


def inflated_pieces(pieces: list[bytes]) -> Iterator[bytes]:
    """Each piece of a chunk's stream inflated in turn: each at most
    :data:`MAX_INFLATED_FRAME`, all of them at most :data:`MAX_INFLATED_CHUNK` (a bomb stops
    there, having made no more than one piece's worth).

    Raises:
        Uninflatable: one line saying which limit, or that it does not decompress.
    """
    d = zlib.decompressobj(-15)
    total = 0
    for piece in pieces:
        try:
            got = d.decompress(piece, MAX_INFLATED_FRAME + 1)
        except zlib.error:
            raise Uninflatable("does not decompress") from None
        if len(got) > MAX_INFLATED_FRAME:
            raise Uninflatable(f"a frame decompresses to more than {MAX_INFLATED_FRAME >> 20} MiB")
        total += len(got)
        if total > MAX_INFLATED_CHUNK:
            raise Uninflatable(f"decompresses to more than {MAX_INFLATED_CHUNK >> 20} MiB")
        yield got


def stream_records(pieces: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """The records of a chunk's stream pieces, as they are inflated (a torn last one is left
    out). Only the records of one piece, and one record carried over, are held at a time.

    Raises:
        Uninflatable: the stream does not decompress or inflates past a bound.
        StreamBound: a record is empty or longer than a frame, or there are more than
            :data:`MAX_RECORDS_PER_FRAME` records for each frame.
    """
    buf = b""
    count = 0
    for n, got in enumerate(inflated_pieces(pieces), 1):
        buf = buf + got if buf else got
        pos, end = 0, len(buf)
        while pos + RECORD.size <= end:
            length, kind = RECORD.unpack_from(buf, pos)
            if length == 0:
                raise StreamBound("an empty record")
            if length > MAX_INFLATED_FRAME:
                raise StreamBound(f"a record longer than {MAX_INFLATED_FRAME >> 20} MiB")
            start = pos + RECORD.size
            if start + length > end:
                break
            count += 1
            if count > MAX_RECORDS_PER_FRAME * n:
                raise StreamBound(f"more than {MAX_RECORDS_PER_FRAME} records a frame")
            yield kind, buf[start : start + length]
            pos = start + length
        buf = buf[pos:]


def decode_stream(
    pieces: list[bytes], name: str, warn: Callable[[str], object], version: int = VERSION
) -> Decoded:
    """The samples in one chunk's stream pieces (a torn last record is left out), within the
    bounds of this module: past one, the samples before it, and one line to ``warn``.
    ``version``: the file's format version (its disk records are read as
    :func:`~iotop_plus.record.upgrade.disk_decoder` says)."""
    chunk = _ChunkDecoder(version)
    try:
        for kind, body in stream_records(pieces):
            if kind == b"K" or (kind == b"D" and chunk.codec is not None):
                chunk.disk(kind, body)
            elif chunk.current is not None and (kind in _JSON_TEXT or _is_part(kind)):
                chunk.json(kind, body)
    except (StreamBound, Uninflatable) as exc:
        n = len(chunk.out) + (chunk.current is not None)
        what = "holds " if isinstance(exc, StreamBound) else ""
        then = f"read its first {n:,} samples" if n else "skipped it"
        warn(f"{name}: a chunk {what}{exc}; {then}")
    except (ValueError, KeyError, TypeError, IndexError, OverflowError, struct.error) as exc:
        warn(f"{name}: a malformed record ({str(exc)[:120]}); read the samples before it")
    if chunk.current is not None:
        chunk.out.append(_finish(chunk.current))
    chunk.out.cost = chunk.cost
    if chunk.left_out:
        kinds = ", ".join(sorted(set(chunk.left_out)))
        warn(
            f"{name}: {len(chunk.left_out):,} records ({kinds}) over {_mib(MAX_JSON_RECORD)} "
            f"each or {_mib(MAX_CHUNK_COST)} a chunk were left out of their samples"
        )
    return chunk.out


class _ChunkDecoder:
    """The state of one chunk's decoding: the disk codec, the sample being filled, the cost."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.out = Decoded()
        self.codec: DiskRecords | None = None
        self.head: dict[str, Any] = {}
        self.ns = self.mono_bits = 0
        self.current: dict[str, Any] | None = None
        self.cost = 0
        self.left_out: list[str] = []

    def disk(self, kind: bytes, body: bytes) -> None:
        """A ``K`` or ``D`` record: the previous sample is done, this one starts."""
        if kind == b"K":
            (length,) = struct.unpack_from("<I", body)
            head = load_json(body[4 : 4 + length])
            if not isinstance(head, dict):
                raise ValueError("a keyframe's head is not an object")
            self.head = head
            layout = Layout.from_json(head["layout"])
            codec = self.codec = disk_decoder(self.version, layout)
            cols = codec.decode_keyframe(body, 4 + length)
            self.ns, self.mono_bits = head["wall_ns"], head["mono_bits"]
            if type(self.ns) is not int or type(self.mono_bits) is not int:
                raise ValueError("a keyframe's times are not integers")
        else:
            if self.codec is None:
                raise ValueError("a delta record before any keyframe")
            codec = self.codec
            dns, dmono = TIMES.unpack_from(body)
            before = bits_float(self.mono_bits)
            self.ns, self.mono_bits = self.ns + dns, self.mono_bits + dmono
            ms = elapsed_ms_of(bits_float(self.mono_bits), before)
            cols = codec.decode(body, TIMES.size, ms)
        mono = bits_float(self.mono_bits)
        if not (0 <= self.ns <= MAX_WALL_NS and math.isfinite(mono)):
            raise ValueError("a sample's time is out of range")
        self.cost += READING_COST * len(codec.layout.names)
        if self.current is not None:
            self.out.append(_finish(self.current))
            self.current = None
            if self.cost > MAX_CHUNK_COST:
                raise StreamBound(f"samples that would take more than {_mib(MAX_CHUNK_COST)}")
        source, notice = self.head.get("source"), self.head.get("notice")
        self.current = {
            "sample": Sample(
                mono,
                self.ns / 1e9,
                MappingProxyType(columns_counters(codec.layout, cols)),
                source=source if isinstance(source, str) and source else "/proc/diskstats",
                notice=notice if isinstance(notice, str) else None,
            )
        }

    def json(self, kind: bytes, body: bytes) -> None:
        """A JSON record of the current sample (kept when it is within the bounds)."""
        assert self.current is not None
        more = json_cost(body)
        if len(body) > MAX_JSON_RECORD or self.cost + more > MAX_CHUNK_COST:
            if self.out and len(body) <= MAX_JSON_RECORD:
                raise StreamBound(f"samples that would take more than {_mib(MAX_CHUNK_COST)}")
            self.left_out.append(kind.decode())  # too big alone, or the kept first sample's
            return
        self.cost += more
        doc = load_json(body)
        if kind in _JSON_TEXT:
            self.current[kind.decode()] = doc
        else:
            letter = kind.decode()
            doc = bounded_part(letter, doc, self.current["sample"].counters)
            self.current.setdefault("parts", {})[letter] = doc


def _first(items: Any, n: int) -> Any:
    return items[:n] if isinstance(items, list) else items


def _devices(doc: Any, devices: Mapping[str, object]) -> Any:
    """A per-device map cut to ``devices`` (looked up from the smaller side)."""
    if not isinstance(doc, dict):
        return doc
    if len(devices) < len(doc):
        return {n: doc[n] for n in devices if n in doc}
    return {n: v for n, v in doc.items() if n in devices}


def _entries(doc: Any, n: int = MAX_PART_ENTRIES) -> Any:
    if isinstance(doc, dict) and len(doc) > n:
        return dict(itertools.islice(doc.items(), n))
    return _first(doc, n)


def bounded_part(kind: str, doc: Any, devices: Mapping[str, object]) -> Any:
    """A recorded frame part cut to what its sample (of ``devices``) can show: issuers (``W``),
    health (``H``) and latency histograms (``Q``) of those devices only, the first
    :data:`~iotop_plus.sampling.processes.issuers.TOP` issuers of each; at most
    :data:`~iotop_plus.sampling.cgroups.active.KEPT_CGROUPS` cgroups (``C``), each with those
    devices only; at most :data:`MAX_PART_ENTRIES` limited cgroups
    (``L``) and :data:`MAX_COMMAND_LINES` command lines (``N``). Anything of another shape is
    left as it is (its reader skips it)."""
    if not isinstance(doc, (dict, list)):
        return doc
    if kind == "W" and isinstance(doc, dict) and isinstance(doc.get("devices"), dict):
        who = _devices(doc["devices"], devices)
        return {**doc, "devices": {n: _first(w, TOP) for n, w in who.items()}}
    if kind == "Q" and isinstance(doc, dict) and isinstance(doc.get("devices"), dict):
        return {**doc, "devices": _devices(doc["devices"], devices)}
    if kind == "H" and isinstance(doc, dict):
        keys = ("devices", "io_errors", "new_errors", "grown")
        return {**doc, **{k: _devices(doc[k], devices) for k in keys if k in doc}}
    if kind == "C" and isinstance(doc, dict) and isinstance(doc.get("cgroups"), list):
        rows = [
            {**row, "devices": _devices(row.get("devices"), devices)}
            if isinstance(row, dict)
            else row
            for row in doc["cgroups"][:KEPT_CGROUPS]
        ]
        return {**doc, "cgroups": rows}
    if kind == "L" and isinstance(doc, dict):
        per_cgroup = max(1, len(devices))  # a cgroup has limits on devices that exist
        return {k: _entries(v, per_cgroup) for k, v in _entries(doc).items()}
    if kind == "N":
        return _entries(doc, MAX_COMMAND_LINES)
    return doc


def _mib(n: int) -> str:
    return f"{n >> 20} MiB"


def _is_part(kind: bytes) -> bool:
    return kind.decode("latin-1") in part_kinds()


def _finish(parts: dict[str, Any]) -> RecordedSample:
    procs = parts.get("P")
    events = parts.get("E")
    return RecordedSample(
        parts["sample"],
        tuple(p for p in procs if isinstance(p, dict)) if isinstance(procs, list) else None,
        parts.get("R") if isinstance(parts.get("R"), dict) else None,
        tuple(e for e in events if isinstance(e, dict)) if isinstance(events, list) else (),
        MappingProxyType(parts.get("parts", {})),
    )


__all__ = [
    "MAX_CHUNK_COST",
    "MAX_JSON_RECORD",
    "MAX_RECORDS_PER_FRAME",
    "Decoded",
    "bounded_part",
    "decode_stream",
    "inflate_stream",
    "json_cost",
    "stream_records",
]
