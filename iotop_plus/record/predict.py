"""The disk-record codec: a predictor chosen per column, zigzag packing.

The 17 counters are coded in :data:`ORDER`, and for each column of each sample the encoder
picks, from that column's :data:`CANDIDATES`, the predictor whose residuals are smallest, and
writes its id before the column. A predictor uses only what the decoder already has: the
previous sample's deltas and the deltas of columns earlier in :data:`ORDER`; a ratio
predictor's division is rounded to the nearest integer (residuals centred on 0 zigzag to
smaller codes). Residuals are zigzag-mapped (``0, -1, 1, -2 ...`` to ``0, 1, 2, 3 ...``) and
packed four to a byte, two to a byte, or as byte planes (every value's low byte, then every
value's next byte ...), which suits deflate's byte-wise Huffman codes.

:class:`DiskDecoder` reads the records; :class:`DiskCodec` also writes them. The disk records
of older format versions are read by :mod:`iotop_plus.record.upgrade`.
"""

from __future__ import annotations

import json
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import sub
from typing import ClassVar

from iotop_plus.record.format import Layout, load_json
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

ZERO = 0
"""Predictor: nothing (the residual is the delta; for in-flight, the value)."""
SECOND = 1
"""Predictor: the previous sample's delta (a second-order delta)."""
MS_SUM = 2
"""Predictor (time in queue): the sum of the four ms deltas times the previous ratio."""
LITTLE = 3
"""Predictor (in flight): time-in-queue delta over the elapsed ms (Little's law)."""
GAUGE = 4
"""Predictor (in flight): the previous sample's value."""
BUSY = 5
"""Predictor (io ticks): ``ms * q // (q + ms)`` with ``q`` the time-in-queue delta.
A single server's utilisation from its mean queue length (M/M/1: ``L = rho / (1 - rho)``, so
``rho = L / (1 + L)``): 0 when idle, approaching the whole interval when the queue is long."""
RATIO = 16
"""Predictor ``RATIO + b``: this sample's delta of column ``b`` times the previous ratio."""

ORDER: tuple[int, ...] = (
    READS,
    WRITES,
    SECTORS_READ,
    SECTORS_WRITTEN,
    READS_MERGED,
    WRITES_MERGED,
    READ_MS,
    WRITE_MS,
    FLUSHES,
    FLUSH_MS,
    DISCARDS,
    DISCARDS_MERGED,
    SECTORS_DISCARDED,
    DISCARD_MS,
    TIME_IN_QUEUE,
    IN_FLIGHT,
    IO_TICKS,
)
"""The order columns are coded in; a ratio predictor's base comes earlier."""

CANDIDATES: dict[int, tuple[int, ...]] = {
    READS: (SECOND, ZERO),
    WRITES: (SECOND, RATIO + READS),
    SECTORS_READ: (SECOND, RATIO + READS),
    SECTORS_WRITTEN: (SECOND, RATIO + WRITES),
    READS_MERGED: (SECOND, RATIO + READS, RATIO + SECTORS_READ),
    WRITES_MERGED: (SECOND, RATIO + WRITES, RATIO + SECTORS_WRITTEN),
    READ_MS: (SECOND, RATIO + READS, RATIO + SECTORS_READ),
    WRITE_MS: (SECOND, RATIO + WRITES, RATIO + SECTORS_WRITTEN),
    TIME_IN_QUEUE: (SECOND, MS_SUM, RATIO + READS, RATIO + WRITES),
    IN_FLIGHT: (GAUGE, ZERO, LITTLE),
    IO_TICKS: (SECOND, RATIO + TIME_IN_QUEUE, BUSY),
    FLUSHES: (SECOND, RATIO + WRITES, RATIO + SECTORS_WRITTEN),
    FLUSH_MS: (SECOND, RATIO + FLUSHES, RATIO + WRITES),
    DISCARDS: (SECOND, RATIO + WRITES, RATIO + FLUSHES),
    DISCARDS_MERGED: (SECOND, RATIO + DISCARDS),
    SECTORS_DISCARDED: (SECOND, RATIO + DISCARDS),
    DISCARD_MS: (SECOND, RATIO + DISCARDS, RATIO + SECTORS_DISCARDED),
}
"""The predictors each column may use (the encoder tries them all, in this order)."""
_MS = (READ_MS, WRITE_MS, DISCARD_MS, FLUSH_MS)


def _check_order() -> None:
    """Every predictor uses only columns coded before its own (the decoder has no others)."""
    seen: set[int] = set()
    for k in ORDER:
        for how in CANDIDATES[k]:
            needs = {how - RATIO} if how >= RATIO else set(_MS) if how == MS_SUM else set()
            if how in (LITTLE, BUSY):
                needs = {TIME_IN_QUEUE}
            if not needs <= seen:
                raise AssertionError(f"predictor {how} of column {k} uses a later column")
        seen.add(k)


_check_order()

CRUMBS, NIBBLES = 0x10, 0x11
"""Packing codes: 2-bit values four to a byte, 4-bit values two to a byte (low bits first)."""
WIDE = 0
"""Packing code: ``u32 n | JSON list`` of the signed values (beyond 64 bits)."""
_PLANES = ((1, "B"), (2, "H"), (4, "I"), (8, "Q"))
_LIMIT = 2**63
RETRY = 8
"""The encoder tries every predictor of a column once in this many samples."""
_BIG_ENDIAN = struct.pack("=H", 1) != b"\x01\x00"
_MASKS: dict[int, tuple[int, int]] = {}


def _lane_masks(n: int) -> tuple[int, int]:
    """For ``n`` 64-bit lanes in one integer: every bit but each lane's lowest, and each
    lane's lowest bit alone."""
    got = _MASKS.get(n)
    if got is None:
        got = (
            int.from_bytes(b"\xfe\xff\xff\xff\xff\xff\xff\xff" * n, "little"),
            int.from_bytes(b"\x01\x00\x00\x00\x00\x00\x00\x00" * n, "little"),
        )
        if len(_MASKS) < 64:
            _MASKS[n] = got
    return got


def _zigzag(values: Sequence[int], negative: bool) -> bytes:
    """The zigzag codes of ``values`` (all within 64 bits, signed), eight little-endian bytes
    each: worked out on one integer of 64-bit lanes, not value by value."""
    raw = array("q", values)
    if raw.itemsize != 8:  # pragma: no cover - C types differ from the usual
        raise ValueError("unexpected array item size")
    if _BIG_ENDIAN:  # pragma: no cover - big-endian host
        raw.byteswap()
    n = len(raw)
    lanes = int.from_bytes(raw.tobytes(), "little")  # each lane the value's two's complement
    if not negative:
        return (lanes << 1).to_bytes(8 * n, "little")
    # (v << 1) ^ (v >> 63) in each lane: the shift's carry into the next lane is masked off,
    # and a negative value's sign bit becomes a lane of ones.
    low_bits, ones = _lane_masks(n)
    signs = (lanes >> 63) & ones
    return (((lanes << 1) & low_bits) ^ ((signs << 64) - signs)).to_bytes(8 * n, "little")


def pack(values: Sequence[int]) -> bytes:
    """Signed integers, zigzag-mapped and packed as tightly as their largest allows."""
    if not values:
        return bytes((CRUMBS,))
    lo, hi = min(values), max(values)
    if lo < -_LIMIT or hi >= _LIMIT:
        text = json.dumps(list(values)).encode()
        return bytes((WIDE,)) + struct.pack("<I", len(text)) + text
    if not lo and not hi:  # an idle column: every code 0
        return bytes((CRUMBS,)) + bytes((len(values) + 3) // 4)
    # The zigzag code of v is 2v, or -2v - 1 when negative: the largest is known already.
    top = max(2 * hi, -2 * lo - 1)
    data = _zigzag(values, lo < 0)
    if top < 16:  # one code a byte here, then two or four to a byte (low bits first)
        codes = data[0::8]
        if top < 4:
            codes += bytes(-len(codes) % 4)
            packed = (
                int.from_bytes(codes[0::4], "little")
                | int.from_bytes(codes[1::4], "little") << 2
                | int.from_bytes(codes[2::4], "little") << 4
                | int.from_bytes(codes[3::4], "little") << 6
            )
            return bytes((CRUMBS,)) + packed.to_bytes(len(codes) // 4, "little")
        codes += bytes(len(codes) % 2)
        packed = int.from_bytes(codes[0::2], "little") | int.from_bytes(codes[1::2], "little") << 4
        return bytes((NIBBLES,)) + packed.to_bytes(len(codes) // 2, "little")
    for width, _typecode in _PLANES:
        if top < 1 << (8 * width):
            return bytes((width,)) + b"".join(data[i::8] for i in range(width))
    raise AssertionError("unreachable")  # pragma: no cover


def column_code(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The packing code byte of the column at ``pos`` and the position of its values.

    Raises:
        ValueError: the record ends before ``pos``.
    """
    if pos >= len(data):
        raise ValueError("column runs past the record")
    return data[pos], pos + 1


def unpack_wide(data: bytes | memoryview, pos: int, n: int) -> tuple[list[int], int]:
    """The ``n`` values of a :data:`WIDE` column whose ``u32 n | JSON list`` is at ``pos``
    (after the code byte); returns them and the new position.

    Raises:
        ValueError: the JSON is not a list of ``n`` integers.
    """
    (length,) = struct.unpack_from("<I", data, pos)
    values = load_json(bytes(data[pos + 4 : pos + 4 + length]))
    if not isinstance(values, list) or len(values) != n:
        raise ValueError("bad wide column")
    if not all(type(v) is int for v in values):
        raise ValueError("a wide column holds something other than integers")
    return values, pos + 4 + length


def unpack(data: bytes | memoryview, pos: int, n: int) -> tuple[list[int], int]:
    """``n`` values packed by :func:`pack` at ``pos``; returns them and the new position.

    Raises:
        ValueError: the bytes do not hold such a column.
    """
    code, pos = column_code(data, pos)
    if code == WIDE:
        return unpack_wide(data, pos, n)
    if code == CRUMBS:
        end = pos + (n + 3) // 4
        z = [b >> s & 3 for b in bytes(data[pos:end]) for s in (0, 2, 4, 6)][:n]
    elif code == NIBBLES:
        end = pos + (n + 1) // 2
        z = [b >> s & 15 for b in bytes(data[pos:end]) for s in (0, 4)][:n]
    else:
        typecode = dict(_PLANES).get(code)
        if typecode is None:
            raise ValueError(f"bad column packing code {code}")
        end = pos + code * n
        if end > len(data):  # before allocating code * n bytes
            raise ValueError("column runs past the record")
        planes = bytes(data[pos:end])
        inter = bytearray(code * n)
        for i in range(code):
            inter[i::code] = planes[i * n : (i + 1) * n]
        arr = array(typecode)
        arr.frombytes(bytes(inter))
        if _BIG_ENDIAN:  # pragma: no cover - big-endian host
            arr.byteswap()
        z = arr.tolist()
    if end > len(data) or len(z) != n:
        raise ValueError("column runs past the record")
    return [(v >> 1) ^ -(v & 1) for v in z], end


def ratio_rounded(now: list[int], prev_k: list[int], prev_base: list[int]) -> list[int]:
    """``now * prev_k / prev_base`` rounded half up per device, or ``prev_k`` where
    ``prev_base <= 0``."""
    return [
        (2 * b * q + r) // (2 * r) if r > 0 else q
        for b, q, r in zip(now, prev_k, prev_base, strict=False)
    ]


@dataclass
class DiskDecoder:
    """Decoder state of one run of disk records (a keyframe, its deltas).

    The encoder (:class:`DiskCodec`) keeps the same state, so the prediction it subtracts is
    the one the decoder adds back.
    """

    layout: Layout
    prev: list[list[int]] = field(default_factory=list)
    """The previous sample's 17 columns of absolute values."""
    deltas: list[list[int]] = field(default_factory=list)
    """The previous sample's 17 columns of deltas (zeros after a keyframe)."""

    candidates: ClassVar[dict[int, tuple[int, ...]]] = CANDIDATES
    """The predictors each column may use; a record naming another is malformed."""

    def _ratio(self, now: list[int], prev_k: list[int], prev_base: list[int]) -> list[int]:
        return ratio_rounded(now, prev_k, prev_base)

    def _unpack(self, body: bytes | memoryview, pos: int, n: int) -> tuple[list[int], int]:
        """The ``n`` values of the column at ``pos`` and the position after it."""
        return unpack(body, pos, n)

    def _columns(self, body: bytes | memoryview, pos: int) -> list[list[int]]:
        """The 17 columns stored one after another at ``pos``, in counter order."""
        n = len(self.layout.names)
        columns = []
        for _ in range(N_COUNTERS):
            col, pos = self._unpack(body, pos, n)
            columns.append(col)
        return columns

    def _start(self, columns: list[list[int]]) -> None:
        """The state after a keyframe of ``columns``."""
        self.prev = columns
        self.deltas = [[0] * len(self.layout.names)] * N_COUNTERS

    def decode_keyframe(self, body: bytes | memoryview, pos: int) -> list[list[int]]:
        """The absolute columns of a ``K`` record's body at ``pos``."""
        columns = self._columns(body, pos)
        self._start(columns)
        return columns

    def _predict(self, k: int, how: int, now: list[list[int]], elapsed_ms: int) -> list[int]:
        """Column ``k``'s prediction by predictor ``how`` (``now``: deltas known so far)."""
        prev = self.deltas
        if how == ZERO:
            return [0] * len(prev[k])
        if how == SECOND:
            return prev[k]
        if how == GAUGE:
            return self.prev[k]
        if how == LITTLE:
            return [t // elapsed_ms for t in now[TIME_IN_QUEUE]]
        if how == BUSY:
            return [elapsed_ms * q // (q + elapsed_ms) if q > 0 else 0 for q in now[TIME_IN_QUEUE]]
        if how == MS_SUM:
            sum_now = [a + b + c + d for a, b, c, d in zip(*(now[m] for m in _MS), strict=False)]
            sum_prev = [a + b + c + d for a, b, c, d in zip(*(prev[m] for m in _MS), strict=False)]
            return self._ratio(sum_now, prev[k], sum_prev)
        base = how - RATIO
        return self._ratio(now[base], prev[k], prev[base])

    def decode(self, body: bytes | memoryview, pos: int, elapsed_ms: int) -> list[list[int]]:
        """The absolute columns of a ``D`` record's body at ``pos``; updates the state."""
        elapsed_ms = max(1, elapsed_ms)
        n = len(self.layout.names)
        now: list[list[int]] = [[]] * N_COUNTERS
        columns: list[list[int]] = [[]] * N_COUNTERS
        for k in ORDER:
            if pos >= len(body):
                raise ValueError("record cut short")
            how = body[pos]
            if how not in self.candidates[k]:
                raise ValueError(f"bad predictor {how} for column {k}")
            res, pos = self._unpack(body, pos + 1, n)
            self._add(k, how, res, now, columns, elapsed_ms)
        self._advance(columns, now)
        return columns

    def _add(
        self,
        k: int,
        how: int,
        res: list[int],
        now: list[list[int]],
        columns: list[list[int]],
        elapsed_ms: int,
    ) -> None:
        """Column ``k`` of a ``D`` record from its residuals ``res`` and predictor ``how``:
        its absolute values go to ``columns``, its delta to ``now`` (in flight's value is
        what is coded, so it has no delta yet)."""
        pred = self._predict(k, how, now, elapsed_ms)
        given = [r + p for r, p in zip(res, pred, strict=False)]
        if k == IN_FLIGHT:
            columns[k] = given
        else:
            now[k] = given
            columns[k] = [p + d for p, d in zip(self.prev[k], given, strict=False)]

    def _advance(self, columns: list[list[int]], now: list[list[int]]) -> None:
        """The state after a ``D`` record of ``columns``, whose deltas but in flight's are
        ``now``."""
        now[IN_FLIGHT] = [
            c - p for c, p in zip(columns[IN_FLIGHT], self.prev[IN_FLIGHT], strict=False)
        ]
        self.prev, self.deltas = columns, now


@dataclass
class DiskCodec(DiskDecoder):
    """Encoder (and decoder) state of one run of disk records: what the writer uses."""

    carry: bool = False
    """Keep the predictor choices across a keyframe (a chunk of the frame store follows the
    one before it); False: every run starts by trying every predictor, as a recording's
    chunk does."""
    _choice: dict[int, int] = field(default_factory=dict)
    """The encoder's last predictor per column."""
    _encoded: int = 0
    """``D`` records encoded since the keyframe (since the first, with :attr:`carry`)."""

    def _start(self, columns: list[list[int]]) -> None:
        super()._start(columns)
        if not self.carry:
            self._choice, self._encoded = {}, 0

    @property
    def choices(self) -> tuple[dict[int, int], int]:
        """The predictor chosen per column and the ``D`` records encoded: what a run with
        :attr:`carry` starts from (a copy)."""
        return dict(self._choice), self._encoded

    @choices.setter
    def choices(self, value: tuple[dict[int, int], int]) -> None:
        self._choice, self._encoded = dict(value[0]), value[1]

    def keyframe(self, columns: list[list[int]]) -> bytes:
        """Body of a ``K`` record (after its JSON part), and the new state."""
        self._start(columns)
        return b"".join(pack(col) for col in columns)

    def _residuals(
        self, k: int, how: int, given: list[int], now: list[list[int]], elapsed_ms: int
    ) -> list[int] | None:
        """``given`` less column ``k``'s prediction by predictor ``how`` (what
        :meth:`~DiskDecoder._predict` gives, worked out with the subtraction in one pass);
        None when the prediction is all zeros (the residuals are ``given``)."""
        prev = self.deltas
        if how == ZERO:
            return None
        if how == GAUGE:
            return list(map(sub, given, self.prev[k]))
        if how == LITTLE:
            return [g - t // elapsed_ms for g, t in zip(given, now[TIME_IN_QUEUE], strict=False)]
        if how == BUSY:
            e = elapsed_ms
            return [
                g - e * q // (q + e) if q > 0 else g
                for g, q in zip(given, now[TIME_IN_QUEUE], strict=False)
            ]
        last = prev[k]
        if not any(last):  # after a keyframe: every ratio of a zero delta predicts 0
            return None
        if how == SECOND:
            return [0] * len(given) if given == last else list(map(sub, given, last))
        if how == MS_SUM:
            base_now = [sum(t) for t in zip(*(now[m] for m in _MS), strict=False)]
            base_prev = [sum(t) for t in zip(*(prev[m] for m in _MS), strict=False)]
        else:
            base_now, base_prev = now[how - RATIO], prev[how - RATIO]
        # ratio_rounded, less from given.
        return [
            g - (2 * b * q + r) // (2 * r) if r > 0 else g - q
            for g, b, q, r in zip(given, base_now, last, base_prev, strict=False)
        ]

    def encode(self, columns: list[list[int]], elapsed_ms: int) -> bytes:
        """Body of a ``D`` record (after its times), and the new state."""
        elapsed_ms = max(1, elapsed_ms)
        before = self.prev
        now: list[list[int]] = [[]] * N_COUNTERS
        for k in range(N_COUNTERS):
            if k != IN_FLIGHT:
                now[k] = list(map(sub, columns[k], before[k]))
        out = []
        # Every predictor is tried on the first samples and every RETRY-th one after; in
        # between, each column keeps its last choice (trying them all doubles the CPU).
        retry = self._encoded < 2 or self._encoded % RETRY == 0
        self._encoded += 1
        candidates = CANDIDATES
        for k in ORDER:
            given = columns[k] if k == IN_FLIGHT else now[k]
            best_res: list[int] | None = None
            best_cost, best_how = 0, -1
            given_cost: int | None = None  # the cost of a prediction of all zeros
            if not retry and k in self._choice:  # the last choice: no costs to compare
                how = self._choice[k]
                res = self._residuals(k, how, given, now, elapsed_ms)
                out.append(bytes((how,)) + pack(given if res is None else res))
                continue
            for how in candidates[k]:
                res = self._residuals(k, how, given, now, elapsed_ms)
                if res is None:
                    if given_cost is not None:
                        continue  # the same residuals as a predictor tried before: no better
                    res = given
                    cost = given_cost = sum(map(abs, given))
                else:
                    cost = sum(map(abs, res))
                if best_res is None or cost < best_cost:
                    best_res, best_cost, best_how = res, cost, how
                    if cost == 0:
                        break
            assert best_res is not None
            self._choice[k] = best_how
            out.append(bytes((best_how,)) + pack(best_res))
        now[IN_FLIGHT] = list(map(sub, columns[IN_FLIGHT], before[IN_FLIGHT]))
        self.prev, self.deltas = columns, now
        return b"".join(out)


def elapsed_ms_of(mono_now: float, mono_prev: float) -> int:
    """The interval in whole ms as both encoder and decoder compute it (at least 1)."""
    return max(1, round((mono_now - mono_prev) * 1000))


__all__ = [
    "CANDIDATES",
    "ORDER",
    "DiskCodec",
    "DiskDecoder",
    "column_code",
    "elapsed_ms_of",
    "pack",
    "unpack",
    "unpack_wide",
]
