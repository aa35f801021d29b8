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

import sys
from array import array
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from iotop_plus.record.format import VERSION, Layout
from iotop_plus.record.predict import (
    BUSY,
    CANDIDATES,
    GAUGE,
    MS_SUM,
    RATIO,
    SECOND,
    WIDE,
    DiskDecoder,
    column_code,
    unpack_wide,
)
from iotop_plus.sampling.disks import diskstats as ds

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

VERSION1_PREDICTORS: dict[int, int] = {
    ds.READS: SECOND,
    ds.WRITES: SECOND,
    ds.DISCARDS: SECOND,
    ds.FLUSHES: SECOND,
    ds.IO_TICKS: SECOND,
    ds.READS_MERGED: RATIO + ds.READS,
    ds.SECTORS_READ: RATIO + ds.READS,
    ds.READ_MS: RATIO + ds.READS,
    ds.WRITES_MERGED: RATIO + ds.WRITES,
    ds.SECTORS_WRITTEN: RATIO + ds.WRITES,
    ds.WRITE_MS: RATIO + ds.WRITES,
    ds.DISCARDS_MERGED: RATIO + ds.DISCARDS,
    ds.SECTORS_DISCARDED: RATIO + ds.DISCARDS,
    ds.DISCARD_MS: RATIO + ds.DISCARDS,
    ds.FLUSH_MS: RATIO + ds.FLUSHES,
    ds.TIME_IN_QUEUE: MS_SUM,
    ds.IN_FLIGHT: GAUGE,
}
"""Version 1's one predictor of each counter, by version 4's ids, in the order they are
applied (a ratio's base before it): second-order deltas for the base counters, the previous
ratio to a base counter (floored), the previous ratio to the sum of the four ms counters for
time in queue, and in flight's previous value."""
_LITTLE = sys.byteorder == "little"
_TYPECODES = {1: "b", 2: "h", 4: "i", 8: "q"}


def unpack_column(data: bytes | memoryview, pos: int, n: int) -> tuple[list[int], int]:
    """``n`` values of a version 1 column at ``pos``; returns them and the new position.

    A column is one code byte (1, 2, 4 or 8: bytes per value, signed little-endian;
    :data:`~iotop_plus.record.predict.WIDE`: ``u32 n | JSON list`` for values beyond 64 bits)
    followed by the values.

    Raises:
        ValueError: the bytes do not hold such a column.
    """
    code, pos = column_code(data, pos)
    if code == WIDE:
        return unpack_wide(data, pos, n)
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


@dataclass
class Version1Decoder(Version2Decoder):
    """Version 1's disk records: version 2's floored ratios, but every counter predicted one
    fixed way (:data:`VERSION1_PREDICTORS`, no predictor ids) and fixed-width columns
    (:func:`unpack_column`) in counter order."""

    def _unpack(self, body: bytes | memoryview, pos: int, n: int) -> tuple[list[int], int]:
        return unpack_column(body, pos, n)

    def decode(self, body: bytes | memoryview, pos: int, elapsed_ms: int) -> list[list[int]]:
        """The absolute columns of a ``D`` record's body at ``pos``; updates the state."""
        residuals = self._columns(body, pos)
        now: list[list[int]] = [[]] * ds.N_COUNTERS
        columns: list[list[int]] = [[]] * ds.N_COUNTERS
        for k, how in VERSION1_PREDICTORS.items():
            self._add(k, how, residuals[k], now, columns, elapsed_ms)
        self._advance(columns, now)
        return columns


__all__ = [
    "DiskRecords",
    "Version1Decoder",
    "Version2Decoder",
    "disk_decoder",
    "rollup",
]
