"""The disk counters ``serve`` exports: node_exporter's semantics under the ``iotop_plus_`` prefix.

node_exporter (``collector/diskstats_linux.go``) exports ``/proc/diskstats`` as counters in
seconds and bytes; so do we, with one difference: discards are in bytes (sectors x 512), not in
sectors, and HELP says so.

The kernel prints the millisecond fields (read, write, discard and flush time, ``io_ticks``,
``time_in_queue``) as 32-bit ``unsigned int``: they wrap every 2^32 ms (49.7 days).
:class:`MonotonicDisks` adds each frame's delta (2^32 ms more at a wrap), so the exported
counters keep rising as Prometheus expects; a device that was reset (a count fell, or its
major:minor changed) starts again from the kernel's values, which Prometheus reads as a counter
reset. The wrap and reset rule is the one of the rates (:func:`~iotop_plus.sampling.disks.diskstats.
counter_deltas`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from iotop_plus.sampling.disks.diskstats import (
    DISCARD_MS,
    DISCARDS,
    DISCARDS_MERGED,
    FLUSH_MS,
    FLUSHES,
    IO_TICKS,
    MS_FIELDS,
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
    counter_deltas,
)

SECTOR_BYTES = 512
"""/proc/diskstats counts 512-byte sectors whatever the device's block size."""

#: Which counters need which kernel: 11 fields always, discards from 4.18, flushes from 5.5.
BASIC, DISCARD, FLUSH = 11, 15, 17


@dataclass(frozen=True)
class DiskCounter:
    """One exported disk counter."""

    name: str
    """Metric name without the prefix and ``_total``, e.g. ``disk_reads_completed``."""
    index: int
    """Index into :attr:`DiskCounters.values`."""
    scale: float
    """Multiplier from the kernel's unit to the exported one (512 for sectors, 0.001 for ms)."""
    help: str
    """HELP text."""
    needs: int
    """Counters the kernel must print (11, 15 or 17) for this one to exist."""
    unit: str = ""
    """OpenMetrics unit (the name's suffix), or empty."""


DISK_COUNTERS: tuple[DiskCounter, ...] = (
    DiskCounter("disk_reads_completed", READS, 1, "Reads completed successfully.", BASIC),
    DiskCounter("disk_reads_merged", READS_MERGED, 1, "Adjacent reads merged.", BASIC),
    DiskCounter(
        "disk_read_bytes", SECTORS_READ, SECTOR_BYTES, "Bytes read (sectors x 512).", BASIC, "bytes"
    ),
    DiskCounter(
        "disk_read_time_seconds",
        READ_MS,
        0.001,
        "Seconds spent by all reads (device time of completed reads, summed).",
        BASIC,
        "seconds",
    ),
    DiskCounter("disk_writes_completed", WRITES, 1, "Writes completed successfully.", BASIC),
    DiskCounter("disk_writes_merged", WRITES_MERGED, 1, "Adjacent writes merged.", BASIC),
    DiskCounter(
        "disk_written_bytes",
        SECTORS_WRITTEN,
        SECTOR_BYTES,
        "Bytes written (sectors x 512).",
        BASIC,
        "bytes",
    ),
    DiskCounter(
        "disk_write_time_seconds",
        WRITE_MS,
        0.001,
        "Seconds spent by all writes (summed).",
        BASIC,
        "seconds",
    ),
    DiskCounter(
        "disk_io_time_seconds",
        IO_TICKS,
        0.001,
        "Seconds the device had I/O in flight (rate() of it is %util / 100).",
        BASIC,
        "seconds",
    ),
    DiskCounter(
        "disk_io_time_weighted_seconds",
        TIME_IN_QUEUE,
        0.001,
        "Seconds spent doing I/O weighted by the I/Os in flight (rate() of it is aqu-sz).",
        BASIC,
        "seconds",
    ),
    DiskCounter(
        "disk_discards_completed", DISCARDS, 1, "Discards completed successfully.", DISCARD
    ),
    DiskCounter("disk_discards_merged", DISCARDS_MERGED, 1, "Adjacent discards merged.", DISCARD),
    DiskCounter(
        "disk_discarded_bytes",
        SECTORS_DISCARDED,
        SECTOR_BYTES,
        "Bytes discarded: in bytes (sectors x 512), unlike node_exporter's "
        "node_disk_discarded_sectors_total.",
        DISCARD,
        "bytes",
    ),
    DiskCounter(
        "disk_discard_time_seconds",
        DISCARD_MS,
        0.001,
        "Seconds spent by all discards (summed).",
        DISCARD,
        "seconds",
    ),
    DiskCounter("disk_flush_requests", FLUSHES, 1, "Flush requests completed.", FLUSH),
    DiskCounter(
        "disk_flush_requests_time_seconds",
        FLUSH_MS,
        0.001,
        "Seconds spent by all flush requests (summed).",
        FLUSH,
        "seconds",
    ),
)


class MonotonicDisks:
    """Raw counters made monotonic across the 32-bit wrap of the millisecond fields.

    Fed every frame (from one thread); :meth:`values` gives the counters to export.
    """

    def __init__(self) -> None:
        self._last: dict[str, DiskCounters] = {}
        self._offsets: dict[str, list[int]] = {}
        """Per device, what to add to the kernel's values: 2^32 per wrap of an ms field."""

    def update(self, counters: Mapping[str, DiskCounters]) -> None:
        """Take the counters of a new frame."""
        last, offsets = self._last, self._offsets
        for name in [n for n in last if n not in counters]:
            del last[name]
            offsets.pop(name, None)
        for name, cur in counters.items():
            prev = last.get(name)
            if prev is not None and prev is not cur and prev.values != cur.values:
                deltas = counter_deltas(prev, cur)
                if deltas is None:
                    offsets.pop(name, None)
                else:
                    pv, cv = prev.values, cur.values
                    for i in MS_FIELDS:
                        # The exported value rises by the delta: pv + delta, not the kernel's cv.
                        if (gap := pv[i] + deltas[i] - cv[i]) != 0:
                            offsets.setdefault(name, [0] * len(cv))[i] += gap
            last[name] = cur

    def values(self, name: str, counters: DiskCounters) -> tuple[int, ...]:
        """The exported counters of ``name``: the kernel's, plus 2^32 per wrap seen."""
        w = self._offsets.get(name)
        if w is None:
            return counters.values
        return tuple(v + n for v, n in zip(counters.values, w, strict=False))
