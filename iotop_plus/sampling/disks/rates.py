"""The iostat -x formulas, as a pure function of two counter snapshots.

Source: sysstat ``rd_stats.c`` (``compute_ext_disk_stats``) and ``iostat.c``
(``write_ext_stat``). Every rate is per second of the *measured* interval.

* Millisecond counters (read/write/discard/flush ms, io_ticks, weighted ms) are 32-bit in
  the kernel, so their deltas are taken modulo 2**32.
* A count or sector counter that goes backwards means the device was re-created: that
  interval has no rates (``None``), never a huge number.

Both rules live in :mod:`iotop_plus.sampling.disks.diskstats` (``MS_WRAP``, ``was_reset``,
``value_deltas``), shared with the exporter, the recording's roll-ups and the probe runner.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
from operator import add, itemgetter, mod, mul, not_, sub, truediv, truth
from typing import NamedTuple

from iotop_plus.sampling.disks.diskstats import (
    DISCARD_MS,
    DISCARDS,
    DISCARDS_MERGED,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    IO_TICKS,
    MS_WRAP,
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
    DiskCounters,
    was_reset,
)
from iotop_plus.sampling.disks.figures import FIGURES

#: Every iostat -x figure of DeviceRates, in iostat -x column order, then the in-flight gauge.
COLUMNS: tuple[str, ...] = tuple(f.key for f in FIGURES)


# A NamedTuple rather than a frozen dataclass, and figures derived on access rather than
# stored: a tick on a host with 5,000 busy devices builds 5,000 of these, and a UI reads only
# the few figures it shows. Building a tuple is ~6x cheaper than a frozen dataclass, and the
# arithmetic of one figure is cheaper than storing all 22 (see benchmarks/bench_sampling.py).
class DeviceRates(NamedTuple):
    """iostat -x figures for one device over one interval. Units are in the names.

    Holds the two counter snapshots and the measured interval; every figure is computed
    from them on access, with the formulas of sysstat's iostat.
    """

    before: tuple[int, ...]
    """The 17 counters at the start of the interval (``DiskCounters.values``)."""
    after: tuple[int, ...]
    """The 17 counters at the end of the interval."""
    elapsed_s: float
    """Measured length of the interval in seconds (> 0)."""

    def _count(self, i: int) -> int:
        return self.after[i] - self.before[i]

    def _ms(self, i: int) -> int:
        # The kernel's ms counters are 32-bit: deltas are taken modulo 2**32 (the rule of
        # diskstats.value_deltas, inlined: this runs for every figure shown).
        return (self.after[i] - self.before[i]) % MS_WRAP

    def _per_io(self, amount: float, ios_index: int) -> float:
        ios = self.after[ios_index] - self.before[ios_index]
        return amount / ios if ios else 0.0

    def _pct(self, merged_index: int, done_index: int) -> float:
        merged = self.after[merged_index] - self.before[merged_index]
        total = merged + self.after[done_index] - self.before[done_index]
        return merged * 100.0 / total if total else 0.0

    @property
    def r_s(self) -> float:
        """Reads completed per second (r/s)."""
        return self._count(READS) / self.elapsed_s

    @property
    def w_s(self) -> float:
        """Writes completed per second (w/s)."""
        return self._count(WRITES) / self.elapsed_s

    @property
    def d_s(self) -> float:
        """Discards completed per second (d/s)."""
        return self._count(DISCARDS) / self.elapsed_s

    @property
    def f_s(self) -> float:
        """Flush requests completed per second (f/s)."""
        return self._count(FLUSHES) / self.elapsed_s

    @property
    def rkb_s(self) -> float:
        """KiB read per second (rkB/s)."""
        return self._count(SECTORS_READ) / self.elapsed_s / 2

    @property
    def wkb_s(self) -> float:
        """KiB written per second (wkB/s)."""
        return self._count(SECTORS_WRITTEN) / self.elapsed_s / 2

    @property
    def dkb_s(self) -> float:
        """KiB discarded per second (dkB/s)."""
        return self._count(SECTORS_DISCARDED) / self.elapsed_s / 2

    @property
    def rrqm_s(self) -> float:
        """Read requests merged per second (rrqm/s)."""
        return self._count(READS_MERGED) / self.elapsed_s

    @property
    def wrqm_s(self) -> float:
        """Write requests merged per second (wrqm/s)."""
        return self._count(WRITES_MERGED) / self.elapsed_s

    @property
    def drqm_s(self) -> float:
        """Discard requests merged per second (drqm/s)."""
        return self._count(DISCARDS_MERGED) / self.elapsed_s

    @property
    def rrqm_pct(self) -> float:
        """Percentage of read requests merged (%rrqm); 0 when there were none."""
        return self._pct(READS_MERGED, READS)

    @property
    def wrqm_pct(self) -> float:
        """Percentage of write requests merged (%wrqm)."""
        return self._pct(WRITES_MERGED, WRITES)

    @property
    def drqm_pct(self) -> float:
        """Percentage of discard requests merged (%drqm)."""
        return self._pct(DISCARDS_MERGED, DISCARDS)

    @property
    def r_await(self) -> float:
        """Mean read latency in ms, queue time included (r_await); 0 without reads."""
        return self._per_io(self._ms(READ_MS), READS)

    @property
    def w_await(self) -> float:
        """Mean write latency in ms (w_await)."""
        return self._per_io(self._ms(WRITE_MS), WRITES)

    @property
    def d_await(self) -> float:
        """Mean discard latency in ms (d_await)."""
        return self._per_io(self._ms(DISCARD_MS), DISCARDS)

    @property
    def f_await(self) -> float:
        """Mean flush latency in ms (f_await)."""
        return self._per_io(self._ms(FLUSH_MS), FLUSHES)

    @property
    def rareq_sz(self) -> float:
        """Mean read size in KiB (rareq-sz); 0 without reads."""
        return self._per_io(self._count(SECTORS_READ) / 2, READS)

    @property
    def wareq_sz(self) -> float:
        """Mean write size in KiB (wareq-sz)."""
        return self._per_io(self._count(SECTORS_WRITTEN) / 2, WRITES)

    @property
    def dareq_sz(self) -> float:
        """Mean discard size in KiB (dareq-sz)."""
        return self._per_io(self._count(SECTORS_DISCARDED) / 2, DISCARDS)

    @property
    def aqu_sz(self) -> float:
        """Mean number of requests queued or in service (aqu-sz)."""
        return self._ms(TIME_IN_QUEUE) / self.elapsed_s / 1000.0

    @property
    def util(self) -> float:
        """Percentage of the interval with at least one I/O in flight (%util).

        Not capped at 100, exactly like iostat 12.6 (io_ticks can run ahead of the clock).
        """
        return self._ms(IO_TICKS) / self.elapsed_s / 10.0

    @property
    def in_flight(self) -> int:
        """I/Os in flight at the end of the interval (a gauge, not a rate)."""
        return self.after[IN_FLIGHT]

    @property
    def iops(self) -> float:
        """Reads plus writes per second."""
        return self.r_s + self.w_s

    @property
    def kb_s(self) -> float:
        """KiB read plus written per second."""
        return self.rkb_s + self.wkb_s

    def figures(self) -> dict[str, float]:
        """Every figure of :data:`COLUMNS` by name."""
        return {name: getattr(self, name) for name in COLUMNS}


def compute_rates(prev: DiskCounters, cur: DiskCounters, elapsed_s: float) -> DeviceRates | None:
    """iostat -x figures for ``cur`` relative to ``prev`` over ``elapsed_s`` seconds.

    Returns:
        The rates, or None when they cannot be computed honestly: a non-positive interval,
        a different device under the same name (major:minor changed) or a counter reset.
    """
    if not elapsed_s > 0 or prev.major != cur.major or prev.minor != cur.minor:
        return None
    pv, cv = prev.values, cur.values
    if pv is not cv and was_reset(pv, cv):
        return None
    return _new_rates(DeviceRates, (pv, cv, elapsed_s))


_new_rates = tuple.__new__


def compute_all(
    prev: Mapping[str, DiskCounters], cur: Mapping[str, DiskCounters], elapsed_s: float
) -> dict[str, DeviceRates | None]:
    """Rates for every device in ``cur``; None for new, reset or re-created devices.

    Each entry is what :func:`compute_rates` gives for that device, worked out inline: this
    runs for every device on every tick, and a call per device cost a third of the time
    (5,000 busy devices: ~6 ms called, ~4 ms inline).
    """
    if not elapsed_s > 0:
        return dict.fromkeys(cur)
    out: dict[str, DeviceRates | None] = {}
    get = prev.get
    new = _new_rates
    for name, after in cur.items():
        before = get(name)
        if before is None:
            out[name] = None
            continue
        pv, cv = before[3], after[3]  # .values, by index: the property costs a call
        if before is after:
            # The parse cache hands back the same object for an unchanged line: idle device.
            out[name] = new(DeviceRates, (pv, pv, elapsed_s))
        elif (
            before[0] != after[0]  # major:minor changed: another device under that name
            or before[1] != after[1]
            or (pv is not cv and was_reset(pv, cv))
        ):
            out[name] = None
        else:
            out[name] = new(DeviceRates, (pv, cv, elapsed_s))
    return out


# How FigureColumns works each figure out from the counters' deltas: per second (counter,
# divisor after the per-second division, 32-bit ms counter?), per I/O (amount counter, halved
# (sectors to KiB; else a 32-bit ms counter)?, I/O count counter), or percentage merged
# (merged counter, done counter). The same operations in the same order as the properties
# above, so every value is the property's, bit for bit.
_PER_SECOND: dict[str, tuple[int, float | None, bool]] = {
    "r_s": (READS, None, False),
    "w_s": (WRITES, None, False),
    "d_s": (DISCARDS, None, False),
    "f_s": (FLUSHES, None, False),
    "rkb_s": (SECTORS_READ, 2, False),
    "wkb_s": (SECTORS_WRITTEN, 2, False),
    "dkb_s": (SECTORS_DISCARDED, 2, False),
    "rrqm_s": (READS_MERGED, None, False),
    "wrqm_s": (WRITES_MERGED, None, False),
    "drqm_s": (DISCARDS_MERGED, None, False),
    "aqu_sz": (TIME_IN_QUEUE, 1000.0, True),
    "util": (IO_TICKS, 10.0, True),
}
_PER_IO: dict[str, tuple[int, bool, int]] = {
    "r_await": (READ_MS, False, READS),
    "w_await": (WRITE_MS, False, WRITES),
    "d_await": (DISCARD_MS, False, DISCARDS),
    "f_await": (FLUSH_MS, False, FLUSHES),
    "rareq_sz": (SECTORS_READ, True, READS),
    "wareq_sz": (SECTORS_WRITTEN, True, WRITES),
    "dareq_sz": (SECTORS_DISCARDED, True, DISCARDS),
}
_MERGED_PCT: dict[str, tuple[int, int]] = {
    "rrqm_pct": (READS_MERGED, READS),
    "wrqm_pct": (WRITES_MERGED, WRITES),
    "drqm_pct": (DISCARDS_MERGED, DISCARDS),
}


def figure_values(rates: Sequence[DeviceRates], key: str) -> list[float]:
    """``[getattr(r, key) for r in rates]``: the same values (see :class:`FigureColumns`)."""
    return FigureColumns(rates).values(key)


def figure_columns(rates: Sequence[DeviceRates], keys: Sequence[str]) -> list[list[float]]:
    """:meth:`FigureColumns.values` of each of ``keys``."""
    columns = FigureColumns(rates)
    return [columns.values(key) for key in keys]


class FigureColumns:
    """The figures of many devices' rates, a column at a time: the same values as the
    properties, bit for bit, each counter's deltas worked out once for all the columns.

    The table fits each column's format to its largest figure over every row, and the
    history records nine figures of every device, each frame: the loops here run in C, not a
    property call per figure (docs/performance.md).
    """

    def __init__(self, rates: Sequence[DeviceRates]) -> None:
        self.rates = rates
        self._elapsed = list(map(_ELAPSED, rates))
        self._afters = list(map(_AFTER, rates))
        self._befores = list(map(_BEFORE, rates))
        self._deltas: dict[tuple[int, bool], list[int]] = {}
        first = self._elapsed[0] if rates else 1.0
        self._one_elapsed = first > 0 and self._elapsed.count(first) == len(rates)
        """Every interval is as long (one frame's rates): a per-second figure's largest is
        then the one of the largest delta (division by a positive number keeps the order)."""

    def _delta(self, i: int, ms: bool = False) -> list[int]:
        found = self._deltas.get((i, ms))
        if found is None:
            get = itemgetter(i)
            out = map(sub, map(get, self._afters), map(get, self._befores))
            found = self._deltas[i, ms] = list(map(mod, out, repeat(MS_WRAP)) if ms else out)
        return found

    def values(self, key: str) -> list[float]:
        """``[getattr(r, key) for r in rates]``."""
        if key == "in_flight":
            return list(map(itemgetter(IN_FLIGHT), self._afters))
        if key in _PER_SECOND:
            i, divisor, ms = _PER_SECOND[key]
            per_s = map(truediv, self._delta(i, ms), self._elapsed)
            return list(per_s if divisor is None else map(truediv, per_s, repeat(divisor)))
        if key in _PER_IO:
            i, halved, ios_i = _PER_IO[key]
            ios = self._delta(ios_i)
            amount: Iterator[float] | list[int] = self._delta(i, ms=not halved)
            if halved:
                amount = map(truediv, amount, repeat(2))
            # amount / ios, and 0.0 where no I/O completed: (0 / 1) there, (amount * 1) / ios
            kept = map(mul, amount, map(truth, ios))
            return list(map(truediv, kept, map(add, ios, map(not_, ios))))
        if key in _MERGED_PCT:
            merged_i, done_i = _MERGED_PCT[key]
            merged = self._delta(merged_i)
            total = list(map(add, merged, self._delta(done_i)))
            kept = map(mul, map(mul, merged, repeat(100.0)), map(truth, total))
            return list(map(truediv, kept, map(add, total, map(not_, total))))
        return [getattr(r, key) for r in self.rates]

    def top(self, key: str, enough: float = 0.0) -> float:
        """The largest ``key`` figure (0.0 with no rates); or, when every figure is certainly
        below ``enough``, perhaps only a bound: a number >= the largest and < ``enough``.

        A mean per I/O (await, request size) is at most its whole amount over the interval,
        so a column whose amounts all stay below ``enough`` needs no division at all.
        """
        if not self.rates:
            return 0.0
        if key in _PER_SECOND and self._one_elapsed:
            i, divisor, ms = _PER_SECOND[key]
            per_s = max(self._delta(i, ms)) / self._elapsed[0]
            return per_s if divisor is None else per_s / divisor
        if key in _PER_IO:
            i, halved, ios_i = _PER_IO[key]
            amount = max(self._delta(i, ms=not halved))
            bound = amount / 2 if halved else amount
            # No I/O: 0.0; else amount / ios <= max(amount, 0) as ios >= 1.
            if 0 <= bound < enough and min(self._delta(ios_i)) >= 0:
                return float(bound)
        return max(self.values(key))


_BEFORE = itemgetter(0)
_AFTER = itemgetter(1)
_ELAPSED = itemgetter(2)
