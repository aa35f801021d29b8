"""The iostat -x formulas, as a pure function of two counter snapshots.

Source: sysstat ``rd_stats.c`` (``compute_ext_disk_stats``) and ``iostat.c``
(``write_ext_stat``). Every rate is per second of the *measured* interval.

* Millisecond counters (read/write/discard/flush ms, io_ticks, weighted ms) are 32-bit in
  the kernel, so their deltas are taken modulo 2**32.
* A count or sector counter that goes backwards means the device was re-created: that
  interval has no rates (``None``), never a huge number.
"""

from __future__ import annotations

from dataclasses import dataclass

from iotop_plus.sampling.diskstats import (
    DISCARD_MS,
    DISCARDS,
    DISCARDS_MERGED,
    FLUSH_MS,
    FLUSHES,
    IN_FLIGHT,
    IO_TICKS,
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
)

MS_WRAP = 1 << 32
_MS_FIELDS = frozenset({READ_MS, WRITE_MS, IO_TICKS, TIME_IN_QUEUE, DISCARD_MS, FLUSH_MS})
_COUNT_FIELDS = tuple(i for i in range(17) if i not in _MS_FIELDS and i != IN_FLIGHT)


@dataclass(frozen=True, slots=True)
class DeviceRates:
    """iostat -x figures for one device over one interval. Units are in the names."""

    r_s: float
    """Reads completed per second (r/s)."""
    w_s: float
    """Writes completed per second (w/s)."""
    d_s: float
    """Discards completed per second (d/s)."""
    f_s: float
    """Flush requests completed per second (f/s)."""
    rkb_s: float
    """KiB read per second (rkB/s)."""
    wkb_s: float
    """KiB written per second (wkB/s)."""
    dkb_s: float
    """KiB discarded per second (dkB/s)."""
    rrqm_s: float
    """Read requests merged per second (rrqm/s)."""
    wrqm_s: float
    """Write requests merged per second (wrqm/s)."""
    drqm_s: float
    """Discard requests merged per second (drqm/s)."""
    rrqm_pct: float
    """Percentage of read requests merged (%rrqm)."""
    wrqm_pct: float
    """Percentage of write requests merged (%wrqm)."""
    drqm_pct: float
    """Percentage of discard requests merged (%drqm)."""
    r_await: float
    """Mean read latency in ms, queue time included (r_await)."""
    w_await: float
    """Mean write latency in ms (w_await)."""
    d_await: float
    """Mean discard latency in ms (d_await)."""
    f_await: float
    """Mean flush latency in ms (f_await)."""
    rareq_sz: float
    """Mean read size in KiB (rareq-sz)."""
    wareq_sz: float
    """Mean write size in KiB (wareq-sz)."""
    dareq_sz: float
    """Mean discard size in KiB (dareq-sz)."""
    aqu_sz: float
    """Mean number of requests queued or in service (aqu-sz)."""
    util: float
    """Percentage of the interval with at least one I/O in flight (%util)."""
    in_flight: int
    """I/Os in flight at the end of the interval (a gauge, not a rate)."""

    @property
    def iops(self) -> float:
        """Reads plus writes per second."""
        return self.r_s + self.w_s

    @property
    def kb_s(self) -> float:
        """KiB read plus written per second."""
        return self.rkb_s + self.wkb_s


def _pct(merged: int, done: int) -> float:
    total = merged + done
    return merged * 100.0 / total if total else 0.0


def _per_io(amount: float, ios: int) -> float:
    return amount / ios if ios else 0.0


def delta(prev: DiskCounters, cur: DiskCounters) -> tuple[int, ...] | None:
    """Per-field deltas, ms fields modulo 2**32; None when the device was reset."""
    pv, cv = prev.values, cur.values
    for i in _COUNT_FIELDS:
        if cv[i] < pv[i]:
            return None
    return tuple((cv[i] - pv[i]) % MS_WRAP if i in _MS_FIELDS else cv[i] - pv[i] for i in range(17))


def compute_rates(prev: DiskCounters, cur: DiskCounters, elapsed_s: float) -> DeviceRates | None:
    """iostat -x figures for ``cur`` relative to ``prev`` over ``elapsed_s`` seconds.

    Returns:
        The rates, or None when they cannot be computed honestly: a non-positive interval,
        a different device under the same name (major:minor changed) or a counter reset.
    """
    if elapsed_s <= 0 or (prev.major, prev.minor) != (cur.major, cur.minor):
        return None
    if prev.values == cur.values:
        return _idle(cur.values[IN_FLIGHT])
    d = delta(prev, cur)
    if d is None:
        return None
    per_s = 1.0 / elapsed_s
    reads, writes, discards = d[READS], d[WRITES], d[DISCARDS]
    return DeviceRates(
        r_s=reads * per_s,
        w_s=writes * per_s,
        d_s=discards * per_s,
        f_s=d[FLUSHES] * per_s,
        rkb_s=d[SECTORS_READ] * per_s / 2,
        wkb_s=d[SECTORS_WRITTEN] * per_s / 2,
        dkb_s=d[SECTORS_DISCARDED] * per_s / 2,
        rrqm_s=d[READS_MERGED] * per_s,
        wrqm_s=d[WRITES_MERGED] * per_s,
        drqm_s=d[DISCARDS_MERGED] * per_s,
        rrqm_pct=_pct(d[READS_MERGED], reads),
        wrqm_pct=_pct(d[WRITES_MERGED], writes),
        drqm_pct=_pct(d[DISCARDS_MERGED], discards),
        r_await=_per_io(d[READ_MS], reads),
        w_await=_per_io(d[WRITE_MS], writes),
        d_await=_per_io(d[DISCARD_MS], discards),
        f_await=_per_io(d[FLUSH_MS], d[FLUSHES]),
        rareq_sz=_per_io(d[SECTORS_READ] / 2, reads),
        wareq_sz=_per_io(d[SECTORS_WRITTEN] / 2, writes),
        dareq_sz=_per_io(d[SECTORS_DISCARDED] / 2, discards),
        aqu_sz=d[TIME_IN_QUEUE] * per_s / 1000.0,
        util=d[IO_TICKS] * per_s / 10.0,
        in_flight=cur.values[IN_FLIGHT],
    )


_IDLE_CACHE: dict[int, DeviceRates] = {}


def _idle(in_flight: int) -> DeviceRates:
    """The shared all-zero rates of an interval in which nothing changed."""
    rates = _IDLE_CACHE.get(in_flight)
    if rates is None:
        rates = DeviceRates(*([0.0] * 22), in_flight)  # type: ignore[call-arg, arg-type]
        _IDLE_CACHE[in_flight] = rates
    return rates


def compute_all(
    prev: dict[str, DiskCounters], cur: dict[str, DiskCounters], elapsed_s: float
) -> dict[str, DeviceRates | None]:
    """Rates for every device in ``cur``; None for new, reset or re-created devices."""
    out: dict[str, DeviceRates | None] = {}
    for name, counters in cur.items():
        before = prev.get(name)
        out[name] = None if before is None else compute_rates(before, counters, elapsed_s)
    return out
