"""Writing one recording file: the header, then chunks of samples, each closed by a trailer.

:class:`ChunkWriter` writes to a descriptor it is given. Every sample leaves the process with
one ``os.write`` (its stream bytes, ended by ``Z_SYNC_FLUSH``), so a ``kill -9`` loses at most
the sample being written; each chunk ends with a trailer and ``fdatasync``.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from iotop_plus.record.format import (
    TIMES,
    Layout,
    counters_columns,
    crc,
    file_prefix,
    frame,
    json_blob,
    part_kinds,
    record,
    trailer_payload,
)
from iotop_plus.record.predict import DiskCodec, elapsed_ms_of
from iotop_plus.sampling.disks.diskstats import (
    COUNT_FIELDS,
    IO_TICKS,
    MS_FIELDS,
    MS_WRAP,
    READ_MS,
    READS,
    SECTORS_READ,
    SECTORS_WRITTEN,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
)
from iotop_plus.sampling.disks.sampler import Sample

_MS_COLUMNS = frozenset(MS_FIELDS)


def _resets(cur: list[list[int]], prev: list[list[int]]) -> list[bool] | None:
    """Per device, whether a count or sector counter went backwards (``was_reset``, by
    column); None when none did."""
    reset: list[bool] | None = None
    for k in COUNT_FIELDS:
        fell = [a < b for a, b in zip(cur[k], prev[k], strict=False)]
        if True in fell:
            reset = fell if reset is None else [x or y for x, y in zip(reset, fell, strict=False)]
    return reset


CHUNK_SECONDS = 60
"""Chunks end at wall-clock minute boundaries, so seeking to a minute finds a keyframe."""


@dataclass(frozen=True)
class RecordedSample:
    """One sample as a recording holds it: the raw counters and what came with them."""

    sample: Sample
    """Raw counters of every device, with the measured monotonic and wall time."""
    processes: tuple[Mapping[str, Any], ...] | None = None
    """Top processes by I/O (``pid comm cgroup read_bytes write_bytes delay_ticks ...``)."""
    pressure: Mapping[str, Any] | None = None
    """PSI totals as ``Pressure.as_json()`` gives them; None when not read."""
    events: tuple[Mapping[str, Any], ...] = ()
    """Device and journal events since the previous sample."""
    parts: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """JSON frame parts by record type (:func:`~iotop_plus.record.format.part_kinds`):
    each is written as one record after the sample; absent types were not recorded."""


def float_bits(value: float) -> int:
    """The IEEE 754 bits of a float as a signed 64-bit integer (exact round trip)."""
    return int(struct.unpack("<q", struct.pack("<d", value))[0])


def bits_float(bits: int) -> float:
    """The inverse of :func:`float_bits`."""
    return float(struct.unpack("<d", struct.pack("<q", bits))[0])


def wall_ns(wall: float) -> int:
    """Wall time in integer UTC nanoseconds."""
    return round(wall * 1e9)


ROLLUP_METRICS = ("iops", "mbps", "await", "util", "aqu")
"""The roll-up's figures: IOPS, MB/s (10^6 B), await (ms), %util and aqu-sz."""
ROLLUP_STATS = ("min", "max", "mean")
"""What the roll-up keeps of each figure over a chunk."""


class Rollup:
    """Per-device min, max and mean of IOPS, MB/s, await, %util and aqu-sz over one chunk."""

    METRICS = ROLLUP_METRICS

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        n = len(names)
        inf = float("inf")
        self.mins = {m: [inf] * n for m in self.METRICS}
        self.maxs = {m: [-inf] * n for m in self.METRICS}
        sums = ("ios", "sectors", "ms", "ticks", "tiq")
        self.sums: dict[str, list[float]] = {k: [0.0] * n for k in sums}
        self.seconds = 0.0

    def add(self, cur: list[list[int]], prev: list[list[int]], dt: float) -> None:
        """Fold in one interval of ``dt`` seconds between two samples of the same layout."""
        if dt <= 0:
            return

        # The deltas of the one wrap and reset rule (value_deltas: ms counters modulo 2^32; a
        # device whose counters were reset adds nothing but the interval's zeros), worked out
        # a column at a time, not per device (docs/performance.md).
        reset = _resets(cur, prev)

        def delta(k: int) -> list[int]:
            now, before = cur[k], prev[k]
            if k in _MS_COLUMNS:
                out = [(a - b) % MS_WRAP for a, b in zip(now, before, strict=False)]
            else:
                out = [a - b for a, b in zip(now, before, strict=False)]
            if reset is not None:
                out = [0 if r else d for d, r in zip(out, reset, strict=False)]
            return out

        ios: list[float] = [a + b for a, b in zip(delta(READS), delta(WRITES), strict=False)]
        sectors = [a + b for a, b in zip(delta(SECTORS_READ), delta(SECTORS_WRITTEN), strict=False)]
        ms = [a + b for a, b in zip(delta(READ_MS), delta(WRITE_MS), strict=False)]
        ticks, tiq = delta(IO_TICKS), delta(TIME_IN_QUEUE)
        figures = {
            "iops": [x / dt for x in ios],
            "mbps": [x * 512 / 1e6 / dt for x in sectors],
            "await": [m / i if i else 0.0 for m, i in zip(ms, ios, strict=False)],
            "util": [x / dt / 10 for x in ticks],
            "aqu": [x / dt / 1000 for x in tiq],
        }
        for m, values in figures.items():
            self.mins[m] = [min(a, b) for a, b in zip(self.mins[m], values, strict=False)]
            self.maxs[m] = [max(a, b) for a, b in zip(self.maxs[m], values, strict=False)]
        for key, counts in (
            ("ios", ios),
            ("sectors", sectors),
            ("ms", ms),
            ("ticks", ticks),
            ("tiq", tiq),
        ):
            self.sums[key] = [a + b for a, b in zip(self.sums[key], counts, strict=False)]
        self.seconds += dt

    def as_json(self) -> dict[str, Any]:
        """``{"devices": [...], "seconds": S, "iops": {"min": [...], "max": [...], "mean":
        [...]}, ...}`` to 3 significant digits: by column, which deflate packs better than a
        row per device (``docs/performance.md``)."""
        if self.seconds <= 0:
            return {"devices": list(self.names), "seconds": 0}
        s, sums = self.seconds, self.sums
        means = {
            "iops": [x / s for x in sums["ios"]],
            "mbps": [x * 512 / 1e6 / s for x in sums["sectors"]],
            "await": [m / i if i else 0.0 for m, i in zip(sums["ms"], sums["ios"], strict=False)],
            "util": [x / s / 10 for x in sums["ticks"]],
            "aqu": [x / s / 1000 for x in sums["tiq"]],
        }
        doc: dict[str, Any] = {"devices": list(self.names), "seconds": round(s, 3)}
        for m in self.METRICS:
            doc[m] = {
                key: [_short(x, 3) for x in values]
                for key, values in zip(
                    ROLLUP_STATS, (self.mins[m], self.maxs[m], means[m]), strict=True
                )
            }
        return doc


def _short(x: float, digits: int) -> float:
    return float(f"{x:.{digits}g}")


@dataclass
class WriteStats:
    """Bytes written, by what they hold (for the benchmark's separate figures)."""

    disks: int = 0
    """``S`` frames: the disk records."""
    extras: int = 0
    """``X`` frames: processes, pressure and events."""
    trailers: int = 0
    """``T`` frames: index facts and roll-ups."""
    headers: int = 0
    """The file prefix, ``H`` and ``I`` frames."""
    samples: int = 0
    """Samples written."""
    by_record: dict[str, int] = field(default_factory=dict)
    """Uncompressed record bytes by record type."""

    @property
    def total(self) -> int:
        """Every byte written."""
        return self.disks + self.extras + self.trailers + self.headers


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (raises OSError, e.g. ENOSPC)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class ChunkEncoder:
    """One chunk's codec: a sample in, its ``S`` and ``X`` stream pieces out.

    The recorder writes the pieces to a file (:class:`ChunkWriter`); the frame store keeps
    them in memory (:mod:`~iotop_plus.record.store`). A chunk ends at a wall-clock minute
    boundary or when the layout changes (:meth:`fits`); :meth:`close` ends it.
    """

    def __init__(self, *, carry: bool = False) -> None:
        """Args:
        carry: Each chunk's disk records keep the predictor choices of the chunk before
            (:attr:`~iotop_plus.record.predict.DiskCodec.carry`: the frame store's chunks of
            a few frames); a recording's chunk starts afresh.
        """
        self.carry = carry
        self.codec: DiskCodec | None = None
        self._choices: tuple[dict[int, int], int] | None = None
        """The last chunk's predictor choices and records (with :attr:`carry`)."""
        self._comp: Any = None
        self.minute = 0
        """The wall-clock minute (``CHUNK_SECONDS``) the open chunk belongs to."""
        self.first_ns = self.last_ns = 0
        self.n = 0
        """Samples in the open chunk."""
        self.crc = 0
        """CRC32 of the open chunk's stream pieces."""
        self._prev_ns = 0
        self._prev_mono_bits = 0
        self._last_mono = 0.0

    @property
    def is_open(self) -> bool:
        """Whether a chunk is open (its keyframe encoded)."""
        return self.codec is not None

    def fits(self, layout: Layout, minute: int) -> bool:
        """Whether a sample of ``layout`` in wall-clock ``minute`` belongs to the open chunk."""
        return self.codec is not None and self.codec.layout == layout and minute == self.minute

    def encode(
        self, rs: RecordedSample, layout: Layout, cols: list[list[int]], ns: int, minute: int
    ) -> tuple[bytes, bytes, bytes, bytes]:
        """Encode one sample into the open chunk (a new one when none is open).

        Returns the disk record, its stream piece, the extra records (processes, pressure,
        events, parts; empty when none) and their stream piece.
        """
        sample = rs.sample
        mono_bits = float_bits(sample.monotonic)
        if self.codec is None:
            # Z_FILTERED suits the small residual bytes better than string matching.
            self._comp = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_FILTERED)
            self.codec = DiskCodec(layout, carry=self.carry)
            if self._choices is not None:
                self.codec.choices = self._choices
            self.minute = minute
            self.first_ns = ns
            self.n = 0
            self.crc = 0
            head = json.dumps(
                {
                    "wall_ns": ns,
                    "mono_bits": mono_bits,
                    "layout": layout.as_json(),
                    "source": sample.source,
                    "notice": sample.notice,
                },
                separators=(",", ":"),
            ).encode()
            body = struct.pack("<I", len(head)) + head + self.codec.keyframe(cols)
            disk = record(b"K", body)
        else:
            times = TIMES.pack(ns - self._prev_ns, mono_bits - self._prev_mono_bits)
            ms = elapsed_ms_of(sample.monotonic, self._last_mono)
            disk = record(b"D", times + self.codec.encode(cols, ms))
        comp = self._comp
        piece = comp.compress(disk) + comp.flush(zlib.Z_SYNC_FLUSH)
        self.crc = zlib.crc32(piece, self.crc)
        extras = b"".join(self._extras(rs))
        extras_piece = b""
        if extras:
            extras_piece = comp.compress(extras) + comp.flush(zlib.Z_SYNC_FLUSH)
            self.crc = zlib.crc32(extras_piece, self.crc)
        self.n += 1
        self.last_ns = ns
        self._prev_ns, self._prev_mono_bits = ns, mono_bits
        self._last_mono = sample.monotonic
        return disk, piece, extras, extras_piece

    @staticmethod
    def _extras(rs: RecordedSample) -> list[bytes]:
        out = []
        if rs.processes is not None:
            out.append(record(b"P", _json([dict(p) for p in rs.processes])))
        if rs.pressure is not None:
            out.append(record(b"R", _json(rs.pressure)))
        if rs.events:
            out.append(record(b"E", _json([dict(e) for e in rs.events])))
        for kind in sorted(rs.parts):
            if kind not in part_kinds():
                raise ValueError(f"no recorded frame part of type {kind!r}")
            out.append(record(kind.encode(), _json(rs.parts[kind])))
        return out

    def close(self) -> None:
        """Forget the open chunk (the next sample starts one with a keyframe)."""
        if self.carry and self.codec is not None:
            self._choices = self.codec.choices
        self.codec = None
        self._comp = None


def sample_layout(sample: Sample) -> tuple[Layout, list[list[int]], int, int]:
    """A sample's layout, counter columns, wall time in ns and wall-clock chunk minute."""
    counters = list(sample.counters.values())
    ns = wall_ns(sample.wall_time)
    return Layout.of(counters), counters_columns(counters), ns, ns // (CHUNK_SECONDS * 10**9)


class ChunkWriter:
    """Writes a header and then samples in chunks to ``fd`` (positioned at its end).

    Args:
        fd: An empty file open for writing; not closed here.
        header: The header document (version, host, zone, inventory ...).
        sync: ``fdatasync`` at each chunk end (the recorder); off for bundles until close.
    """

    def __init__(self, fd: int, header: Mapping[str, Any], *, sync: bool = True) -> None:
        self.fd = fd
        self.sync = sync
        self.stats = WriteStats()
        self.offset = 0
        self.inv_offset = 0
        self._encoder = ChunkEncoder()
        self._chunk_start = 0
        self._rollup: Rollup | None = None
        self._last_cols: list[list[int]] | None = None
        self._last_layout: Layout | None = None
        self._last_mono = 0.0
        prefix = file_prefix()
        self._put(prefix, "headers")
        self.inv_offset = self.offset
        self._put(frame(b"H", json_blob(dict(header))), "headers")

    def _put(self, data: bytes, kind: str) -> None:
        write_all(self.fd, data)
        self.offset += len(data)
        setattr(self.stats, kind, getattr(self.stats, kind) + len(data))

    def inventory(self, doc: Mapping[str, Any]) -> None:
        """The device inventory changed: close the chunk and write the new one."""
        self.close_chunk()
        self.inv_offset = self.offset
        self._put(frame(b"I", json_blob(dict(doc))), "headers")

    def append(self, rs: RecordedSample) -> None:
        """Write one sample now (raises OSError when the file system refuses it)."""
        sample = rs.sample
        layout, cols, ns, minute = sample_layout(sample)
        encoder = self._encoder
        if encoder.is_open and not encoder.fits(layout, minute):
            self.close_chunk()
        if self._last_layout == layout and self._last_cols is not None:
            if self._rollup is None:
                self._rollup = Rollup(layout.names)
            self._rollup.add(cols, self._last_cols, sample.monotonic - self._last_mono)
        if not encoder.is_open:
            self._chunk_start = self.offset
            if self._rollup is None or self._rollup.names != layout.names:
                self._rollup = Rollup(layout.names)
        disk, piece, extras, extras_piece = encoder.encode(rs, layout, cols, ns, minute)
        self._count(disk)
        out = frame(b"S", piece)
        disk_len = len(out)
        if extras:
            self._count(extras)
            out += frame(b"X", extras_piece)
        # One write per sample: it reaches the kernel before the next interval starts.
        write_all(self.fd, out)
        self.offset += len(out)
        self.stats.disks += disk_len
        self.stats.extras += len(out) - disk_len
        self.stats.samples += 1
        self._last_cols, self._last_layout, self._last_mono = cols, layout, sample.monotonic

    def _count(self, records: bytes) -> None:
        kind = chr(records[4])
        self.stats.by_record[kind] = self.stats.by_record.get(kind, 0) + len(records)

    def close_chunk(self) -> None:
        """End the open chunk with its trailer and ``fdatasync`` (nothing if none is open)."""
        encoder = self._encoder
        if not encoder.is_open:
            return
        rollup = self._rollup.as_json() if self._rollup is not None else {}
        payload = trailer_payload(
            self._chunk_start,
            self.inv_offset,
            encoder.first_ns,
            encoder.last_ns,
            encoder.n,
            encoder.crc & 0xFFFFFFFF,
            json_blob(rollup),
        )
        encoder.close()
        self._rollup = None
        self._put(frame(b"T", payload), "trailers")
        if self.sync:
            os.fdatasync(self.fd)

    def abandon(self) -> None:
        """Forget the open chunk without writing (after a failed write: the file is done)."""
        self._encoder.close()


def _json(doc: Any) -> bytes:
    r"""``doc`` as compact ASCII JSON: a name's bytes that are not UTF-8 (surrogate escapes)
    are written as ``\udcNN`` and read back as they were."""
    return json.dumps(doc, separators=(",", ":")).encode()


__all__ = [
    "CHUNK_SECONDS",
    "ChunkEncoder",
    "ChunkWriter",
    "RecordedSample",
    "WriteStats",
    "crc",
    "sample_layout",
]
