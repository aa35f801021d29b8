"""The one registry of iostat -x figures: what each is called where, its unit, what it means.

The device table, the help screen, ``snapshot``'s table, JSON and CSV, and the charts all read
their names from here, so a figure is described once. Pure: no textual, no rich.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Note:
    """What a figure (or a family of them, such as r/s and w/s) means and when it misleads."""

    meaning: str
    """One line, no final full stop."""
    misleads: str
    """When the figure suggests something it does not show; no final full stop."""


@dataclass(frozen=True)
class Figure:
    """One iostat -x figure of :class:`~iotop_plus.sampling.disks.rates.DeviceRates`."""

    key: str
    """The DeviceRates attribute."""
    title: str
    """Column header as ``iostat -x`` prints it (``%util``, ``rareq-sz``)."""
    json_key: str
    """Key in ``iostat -o JSON`` and in ``snapshot``'s JSON and CSV (``util``, ``rareq-sz``)."""
    unit: str
    """Unit shown under the header."""
    note: Note
    """Meaning and pitfalls; figures of one family share one note (one help line)."""
    iostat: bool = True
    """Printed by iostat itself; False for what iotop-plus adds (the in-flight gauge)."""
    integer: bool = False
    """A count (printed without decimals), not a rate or mean."""

    @property
    def meaning(self) -> str:
        """What the figure means."""
        return self.note.meaning

    @property
    def misleads(self) -> str:
        """When it misleads."""
        return self.note.misleads


_IOPS = Note("reads / writes completed per second", "merged requests count once")
_KBS = Note("KiB read / written per second", "buffered writes land later, at writeback")
_MERGED = Note("requests merged into others per second", "high is good for sequential I/O")
_MERGED_PCT = Note("share of requests merged", "0 with scheduler none and random I/O is normal")
_AWAIT = Note(
    "mean ms per request, from queueing to completion",
    "includes time waiting in the queue: high await with high aqu-sz is queueing, "
    "not a slow device; a mean hides rare slow requests",
)
_REQ_SZ = Note("mean request size in KiB", "after merging; small means random")
_DISCARD = Note("discards (TRIM): rate, KiB, merges, latency, size", "0 unless fstrim/discard")
_FLUSH = Note("cache flushes per second and their latency", "partitions never count them")
_AQU = Note(
    "mean requests queued or in service",
    "compare it with the queue's nr_requests (red at 80%): a full queue blocks submitters",
)
_UTIL = Note(
    "share of the interval with at least one request in flight",
    "means saturation only on a disk that serves one request at a time; SSD, NVMe, "
    "RAID and virtual disks serve many at once, so 100% there can be far from full. "
    "Such devices show '~' and dim text: read aqu-sz and await instead",
)
_IN_FLIGHT = Note("requests in flight at the end of the interval", "a gauge, not a mean")

#: Every figure, in ``iostat -x`` column (and JSON key) order, then the in-flight gauge.
FIGURES: tuple[Figure, ...] = (
    Figure("r_s", "r/s", "r/s", "IO/s", _IOPS),
    Figure("rkb_s", "rkB/s", "rkB/s", "KiB/s", _KBS),
    Figure("rrqm_s", "rrqm/s", "rrqm/s", "req/s", _MERGED),
    Figure("rrqm_pct", "%rrqm", "rrqm", "%", _MERGED_PCT),
    Figure("r_await", "r_await", "r_await", "ms", _AWAIT),
    Figure("rareq_sz", "rareq-sz", "rareq-sz", "KiB", _REQ_SZ),
    Figure("w_s", "w/s", "w/s", "IO/s", _IOPS),
    Figure("wkb_s", "wkB/s", "wkB/s", "KiB/s", _KBS),
    Figure("wrqm_s", "wrqm/s", "wrqm/s", "req/s", _MERGED),
    Figure("wrqm_pct", "%wrqm", "wrqm", "%", _MERGED_PCT),
    Figure("w_await", "w_await", "w_await", "ms", _AWAIT),
    Figure("wareq_sz", "wareq-sz", "wareq-sz", "KiB", _REQ_SZ),
    Figure("d_s", "d/s", "d/s", "IO/s", _DISCARD),
    Figure("dkb_s", "dkB/s", "dkB/s", "KiB/s", _DISCARD),
    Figure("drqm_s", "drqm/s", "drqm/s", "req/s", _DISCARD),
    Figure("drqm_pct", "%drqm", "drqm", "%", _DISCARD),
    Figure("d_await", "d_await", "d_await", "ms", _DISCARD),
    Figure("dareq_sz", "dareq-sz", "dareq-sz", "KiB", _DISCARD),
    Figure("f_s", "f/s", "f/s", "IO/s", _FLUSH),
    Figure("f_await", "f_await", "f_await", "ms", _FLUSH),
    Figure("aqu_sz", "aqu-sz", "aqu-sz", "req", _AQU),
    Figure("util", "%util", "util", "%", _UTIL),
    Figure("in_flight", "inflight", "in_flight", "req", _IN_FLIGHT, iostat=False, integer=True),
)

_LATENCY = Note(
    "device time percentiles (issue to completion) over the interval, from the block "
    "tracepoints (bpftrace, root); the queue/device line splits time into scheduler queue "
    "and device",
    "merged requests count once (with the longest wait); requests that bypass the scheduler "
    "(scheduler none, passthrough) have no queue time; a loop device measures its backing "
    "file, whose I/O shows again on the disk below; p99.9 needs 1000+ requests per interval",
)

#: Latency percentiles (the ``latency`` column set; not DeviceRates attributes, they come
#: from the frame's latency part). Keys are the CSV column names without ``_ms``.
LATENCY_FIGURES: tuple[Figure, ...] = tuple(
    Figure(f"{op}_{p}", f"{op}_{title}", f"{op}_{p}_ms", "ms", _LATENCY, iostat=False)
    for op in ("r", "w")
    for p, title in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max"))
)

BY_KEY: dict[str, Figure] = {f.key: f for f in (*FIGURES, *LATENCY_FIGURES)}
"""Figures by DeviceRates attribute (or latency key)."""

IOSTAT_FIGURES: tuple[Figure, ...] = tuple(f for f in FIGURES if f.iostat)
"""The figures ``iostat -x`` prints, in its order."""

HELP_ORDER: tuple[Note, ...] = (
    _IOPS,
    _KBS,
    _AWAIT,
    _AQU,
    _UTIL,
    _MERGED,
    _MERGED_PCT,
    _REQ_SZ,
    _DISCARD,
    _FLUSH,
    _IN_FLIGHT,
    _LATENCY,
)
"""The order the help explains the notes in: the figures people read first, first."""


def figure(key: str) -> Figure:
    """The figure of DeviceRates attribute ``key``.

    Raises:
        KeyError: naming the unknown key.
    """
    return BY_KEY[key]


def notes() -> list[tuple[tuple[Figure, ...], Note]]:
    """One entry per help line: the figures a note covers (in table order), and the note."""
    every = (*FIGURES, *LATENCY_FIGURES)
    return [(tuple(f for f in every if f.note is note), note) for note in HELP_ORDER]
