"""Recordings of format versions 1 to 3, read as version 4: the one upgrade step.

Only version 4 is written. An older file differs from it in two things, and this module turns
each into what version 4 decodes to, so the rest of the reader knows version 4 only:

- **Disk records** (``K``, ``D``): version 1's codec (:class:`Version1Decoder`) and version 2's
  (:class:`Version2Decoder`) give the same counters as version 4's codec; version 3's records
  are version 4's (:func:`disk_decoder`).
- **Roll-ups** in the chunk trailers: versions 1 and 2 stored ``[min, max, mean]`` per device;
  :func:`rollup` turns them into version 4's columns.

Everything else reads as it is: the frames, chunks, trailers and the ``P``/``R``/``E`` records
are version 4's, and an older file has no frame parts (its frames say "not recorded"). The
byte layouts are in ``docs/recording-format.md``; ``tests/fixtures/recordings/`` holds a file
of each older version.
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from iotop_plus.record.format import VERSION, Layout, load_json
from iotop_plus.record.predict import BUSY, CANDIDATES, DiskDecoder
from iotop_plus.sampling.disks.diskstats import (
    DISCARD_MS,
    DISCARDS,
    DISCARDS_MERGED,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    IO_TICKS,
    N_COUNTERS,
    READ_MS,
    READS,
    READS_MERGED,
    SECTORS_DISCARDED,
    SECTORS_READ,
    SECTORS_WRITTEN,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
    WRITES_MERGED,
)

ROLLUP_STATS = ("min", "max", "mean")
"""A version 1 or 2 roll-up row's figures, in order (version 4's column names)."""


class DiskRecords(Protocol):
    """What reads a chunk's disk records, whatever the file's version."""

    layout: Layout

    def decode_keyframe(self, body: bytes | memoryview, pos: int) -> list[list[int]]:
        """The absolute columns of a ``K`` record's body at ``pos``."""
        ...

    def decode(self, body: bytes | memoryview, pos: int, elapsed_ms: int) -> list[list[int]]:
        """The absolute columns of a ``D`` record's body at ``pos``."""
        ...


def disk_decoder(version: int, layout: Layout) -> DiskRecords:
    """The decoder of a chunk's disk records in a file of format ``version``."""
    if version == 1:
        return Version1Decoder(layout)
    if version == 2:
        return Version2Decoder(layout)
    if not 3 <= version <= VERSION:
        raise ValueError(f"no disk records of format version {version}")
    return DiskDecoder(layout)


def rollup(version: int, doc: Any) -> Any:
    """A chunk trailer's roll-up document in version 4's shape: ``{METRIC: {"min": [...],
    "max": [...], "mean": [...]}}`` where versions 1 and 2 stored ``{METRIC: [[min, max,
    mean], ...]}`` (one row a device). Anything else is left as it is (the reader checks it)."""
    if version >= 3 or not isinstance(doc, dict):
        return doc
    out = dict(doc)
    for key, rows in doc.items():
        if key in ("devices", "seconds") or not isinstance(rows, list):
            continue
        if all(isinstance(row, list) and len(row) == len(ROLLUP_STATS) for row in rows):
            out[key] = {stat: [row[j] for row in rows] for j, stat in enumerate(ROLLUP_STATS)}
    return out


# --- version 2: fewer predictors, ratios floored ------------------------------------------------


def ratio_floored(now: list[int], prev_k: list[int], prev_base: list[int]) -> list[int]:
    """``now * prev_k // prev_base`` per device, or ``prev_k`` where ``prev_base <= 0``."""
    return [(b * q) // r if r > 0 else q for b, q, r in zip(now, prev_k, prev_base, strict=False)]


@dataclass
class Version2Decoder(DiskDecoder):
    """Version 2's disk records: version 4's codec without the :data:`~iotop_plus.record.
    predict.BUSY` predictor, and with ratio predictions floored instead of rounded."""

    candidates: ClassVar[dict[int, tuple[int, ...]]] = {
        k: tuple(how for how in hows if how != BUSY) for k, hows in CANDIDATES.items()
    }

    def _ratio(self, now: list[int], prev_k: list[int], prev_base: list[int]) -> list[int]:
        return ratio_floored(now, prev_k, prev_base)


# --- version 1: one predictor per counter, fixed-width columns ----------------------------------

#: Counters predicted from another counter of the same sample: (counter, base counter).
#: The prediction is ``delta(base) * previous delta(counter) // previous delta(base)``.
RATIO_PREDICTED = (
    (READS_MERGED, READS),
    (SECTORS_READ, READS),
    (READ_MS, READS),
    (WRITES_MERGED, WRITES),
    (SECTORS_WRITTEN, WRITES),
    (WRITE_MS, WRITES),
    (DISCARDS_MERGED, DISCARDS),
    (SECTORS_DISCARDED, DISCARDS),
    (DISCARD_MS, DISCARDS),
    (FLUSH_MS, FLUSHES),
)
#: Counters predicted by their previous delta (second-order delta).
DELTA_PREDICTED = (READS, WRITES, DISCARDS, FLUSHES, IO_TICKS)
_MS = (READ_MS, WRITE_MS, DISCARD_MS, FLUSH_MS)
_LITTLE = sys.byteorder == "little"
_TYPECODES = {1: "b", 2: "h", 4: "i", 8: "q"}


def unpack_column(data: bytes | memoryview, pos: int, n: int) -> tuple[list[int], int]:
    """``n`` values of a version 1 column at ``pos``; returns them and the new position.

    A column is one code byte (1, 2, 4 or 8: bytes per value, signed little-endian; 0:
    ``u32 n | JSON list`` for values beyond 64 bits) followed by the values.

    Raises:
        ValueError: the bytes do not hold such a column.
    """
    if pos >= len(data):
        raise ValueError("column runs past the record")
    code = data[pos]
    pos += 1
    if code == 0:
        (length,) = struct.unpack_from("<I", data, pos)
        pos += 4
        values = load_json(bytes(data[pos : pos + length]))
        if not isinstance(values, list) or len(values) != n:
            raise ValueError("bad wide column")
        if not all(type(v) is int for v in values):
            raise ValueError("a wide column holds something other than integers")
        return values, pos + length
    typecode = _TYPECODES.get(code)
    if typecode is None:
        raise ValueError(f"bad column width code {code}")
    if n == 0:
        return [], pos
    end = pos + code * n
    if end > len(data):
        raise ValueError("column runs past the record")
    arr = array(typecode)
    arr.frombytes(bytes(data[pos:end]))
    if not _LITTLE:
        arr.byteswap()
    return arr.tolist(), end


def _columns(body: bytes | memoryview, pos: int, n: int) -> list[list[int]]:
    columns = []
    for _ in range(N_COUNTERS):
        col, pos = unpack_column(body, pos, n)
        columns.append(col)
    return columns


@dataclass
class Version1Decoder:
    """Version 1's disk records: every counter predicted one fixed way, fixed-width columns."""

    layout: Layout
    prev: list[list[int]] = field(default_factory=list)
    """The previous sample's 17 columns of absolute values."""
    deltas: list[list[int]] = field(default_factory=list)
    """The previous sample's 17 columns of deltas (zeros after a keyframe)."""

    def decode_keyframe(self, body: bytes | memoryview, pos: int) -> list[list[int]]:
        """The absolute columns of a ``K`` record's body at ``pos``."""
        columns = _columns(body, pos, len(self.layout.names))
        self.prev = columns
        self.deltas = [[0] * len(self.layout.names)] * N_COUNTERS
        return columns

    def decode(self, body: bytes | memoryview, pos: int, elapsed_ms: int) -> list[list[int]]:
        """The absolute columns of a ``D`` record's body at ``pos`` (version 1 predicts
        nothing from the interval: ``elapsed_ms`` is not used); updates the state."""
        del elapsed_ms
        residuals = _columns(body, pos, len(self.layout.names))
        prev = self.deltas
        deltas: list[list[int]] = [[]] * N_COUNTERS
        for k in DELTA_PREDICTED:  # base counters first: second-order deltas
            deltas[k] = [g + p for g, p in zip(residuals[k], prev[k], strict=False)]
        for k, base in RATIO_PREDICTED:
            pred = ratio_floored(deltas[base], prev[k], prev[base])
            deltas[k] = [g + p for g, p in zip(residuals[k], pred, strict=False)]
        ms_now = [a + b + c + d for a, b, c, d in zip(*(deltas[k] for k in _MS), strict=False)]
        ms_prev = [a + b + c + d for a, b, c, d in zip(*(prev[k] for k in _MS), strict=False)]
        pred = ratio_floored(ms_now, prev[TIME_IN_QUEUE], ms_prev)
        deltas[TIME_IN_QUEUE] = [
            g + p for g, p in zip(residuals[TIME_IN_QUEUE], pred, strict=False)
        ]
        deltas[IN_FLIGHT] = residuals[IN_FLIGHT]  # a gauge: its first-order delta
        columns = [
            [p + d for p, d in zip(old, dl, strict=False)]
            for old, dl in zip(self.prev, deltas, strict=False)
        ]
        self.prev, self.deltas = columns, deltas
        return columns


__all__ = [
    "DiskRecords",
    "Version1Decoder",
    "Version2Decoder",
    "disk_decoder",
    "rollup",
]
