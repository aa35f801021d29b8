"""A probe's result (:class:`ProbeResult`), the hints read from the numbers, and where the
result sits among device classes. :mod:`iotop_plus.probe.fio_parse` builds it from fio's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from iotop_plus.probe.presets import QUOTE_RUNTIME_S, Preset, ProbeParams
from iotop_plus.text import us_or_ms

#: The clat percentiles shown, as fio keys them.
PERCENTILES: tuple[tuple[str, str], ...] = (
    ("p50", "50.000000"),
    ("p95", "95.000000"),
    ("p99", "99.000000"),
    ("p99.9", "99.900000"),
    ("p99.99", "99.990000"),
)


class FioOutputError(Exception):
    """fio's output is not a usable result; the message is one plain line."""


@dataclass(frozen=True)
class Latency:
    """One fio latency block (``clat_ns``, ``sync.lat_ns``...), in microseconds."""

    mean_us: float
    """Mean latency."""
    min_us: float
    """Smallest latency seen."""
    max_us: float
    """Largest latency seen."""
    percentiles_us: tuple[tuple[str, float], ...] = ()
    """(label, value) for p50, p95, p99, p99.9, p99.99 where fio gave them."""

    def percentile(self, label: str) -> float | None:
        """The percentile called ``label`` (``p99``), or None."""
        return dict(self.percentiles_us).get(label)


@dataclass(frozen=True)
class BlockLatency:
    """Device-side latency of one direction while the probe ran: block-layer issue to
    completion, from the latency tracer, in microseconds (it excludes the syscall, the
    filesystem and CPU waits that fio's ``clat`` includes)."""

    count: int
    """Requests the device completed."""
    mean_us: float
    """Mean device time."""
    max_us: float
    """Longest device time (exact)."""
    percentiles_us: tuple[tuple[str, float], ...] = ()
    """(label, value) for p50, p99 and p99.9."""
    sampled: int = 1
    """The tracer timed one request in this many, chosen on the sector (so the figures are
    an unbiased sample; :attr:`count` estimates all requests, :attr:`max_us` is the
    sample's); 1: all."""

    def percentile(self, label: str) -> float | None:
        """The percentile called ``label`` (``p99``), or None."""
        return dict(self.percentiles_us).get(label)


@dataclass(frozen=True)
class DirectionResult:
    """The figures for reads or for writes."""

    iops: float
    """I/Os per second over the run."""
    bw_kib_s: int
    """Bandwidth in KiB/s (fio's ``bw``)."""
    io_bytes: int
    """Bytes transferred."""
    total_ios: int
    """I/Os completed."""
    runtime_ms: int
    """Time this direction ran."""
    clat: Latency
    """Completion latency (submission to completion)."""
    slat_mean_us: float
    """Mean submission latency."""
    lat_mean_us: float
    """Mean total latency (slat + clat)."""
    iops_min: float
    """Lowest IOPS of a 500 ms sample."""
    iops_max: float
    """Highest IOPS of a 500 ms sample."""
    bw_min_kib_s: float
    """Lowest bandwidth of a 500 ms sample."""
    bw_max_kib_s: float
    """Highest bandwidth of a 500 ms sample."""
    bw_mean_kib_s: float
    """Mean of the bandwidth samples."""
    bw_samples: int
    """How many bandwidth samples there were."""
    block: BlockLatency | None = None
    """The device-side latency of these requests, when the block tracer ran."""


@dataclass(frozen=True)
class DiskUtil:
    """What one device actually served during the probe (fio's ``disk_util``)."""

    name: str
    """Kernel device name."""
    read_ios: int
    """Reads the device completed."""
    write_ios: int
    """Writes the device completed."""
    util_pct: float
    """Percentage of the run the device was busy."""


@dataclass(frozen=True)
class Issuers:
    """Who issued the requests on the probed device while fio ran, from the block tracer
    (``block_io_start``, in the submitting task's context)."""

    fio: int
    """Requests issued by fio (its threads and io_uring workers share its pid; in a buffered
    run, kernel workers writing its pages back count as fio)."""
    journal: int
    """Requests issued by the target filesystem's journal thread (``jbd2/DEV-N``): the
    commits a probe's own fsyncs cause."""
    others: tuple[tuple[str, int], ...] = ()
    """``("comm[pid]", requests)`` of every other issuer, most first."""
    sampled: int = 1
    """The counts are estimates: the tracer counted one request in this many (chosen on the
    sector) and they are scaled up by it; 1: exact."""

    @property
    def other_requests(self) -> int:
        """Requests issued by neither fio nor the journal thread."""
        return sum(n for _, n in self.others)


@dataclass(frozen=True)
class Hint:
    """One interpretation rule that fired on the numbers."""

    code: str
    """Stable identifier (``tail-jitter``, ``stalls``...)."""
    text: str
    """The interpretation in plain words."""


@dataclass(frozen=True)
class DeviceClass:
    """Typical figures of one class of device, with where they come from."""

    name: str
    """Class name."""
    iops: tuple[float, float]
    """Typical 4k random read IOPS range (low QD to the best datasheet figure)."""
    latency_us: tuple[float, float]
    """Typical single read latency range, microseconds."""
    bw_mb_s: tuple[float, float]
    """Typical sequential bandwidth range, MB/s."""
    source: str
    """Where the figures come from, and what they are."""


#: The device-class reference the result is placed against. These are typical public
#: figures, not guarantees: datasheet numbers are best cases at high queue depth.
DEVICE_CLASSES: tuple[DeviceClass, ...] = (
    DeviceClass(
        "HDD (7200 rpm)",
        (75, 200),
        (4_000, 15_000),
        (100, 285),
        "Mechanics: ~8.5 ms average seek + 4.17 ms half rotation at 7200 rpm gives ~80 "
        "random IOPS at QD1, ~170-200 with deep queues; 285 MB/s is the outer-track "
        "sustained rate in Seagate Exos X18 datasheets.",
    ),
    DeviceClass(
        "Network block storage",
        (3_000, 16_000),
        (500, 10_000),
        (125, 1_000),
        "AWS EBS gp3 documentation: 3,000 IOPS and 125 MiB/s baseline, provisionable to "
        "16,000 IOPS and 1,000 MiB/s, 'single-digit millisecond' latency (io2 Block Express "
        "goes to 256,000 IOPS, sub-millisecond). Other clouds' general-purpose volumes are "
        "of the same order.",
    ),
    DeviceClass(
        "SATA SSD",
        (10_000, 100_000),
        (50, 250),
        (400, 560),
        "Samsung 870 EVO datasheet: up to 98K 4k random read IOPS at QD32 and 560 MB/s "
        "sequential read; SATA 6 Gb/s caps any SATA device near 550-600 MB/s.",
    ),
    DeviceClass(
        "NVMe SSD",
        (100_000, 1_500_000),
        (10, 120),
        (1_500, 7_500),
        "Samsung 990 PRO datasheet: up to 1.4M 4k random read IOPS (QD32, 16 threads) and "
        "7,450 MB/s sequential read on PCIe 4.0; QD1 reads on NAND take tens of µs.",
    ),
)


@dataclass(frozen=True)
class ProbeResult:
    """A finished probe's figures, as fio reported them, plus what they suggest."""

    preset: str
    """Preset name (``wal``)."""
    title: str
    """Preset title."""
    params: ProbeParams
    """The parameters run (with the engine actually used)."""
    target: str
    """Where it ran, for people."""
    device: str | None
    """The block device measured, when known."""
    fio_version: str
    """fio's version string."""
    read: DirectionResult | None
    """Read figures, when the pattern read."""
    write: DirectionResult | None
    """Write figures, when the pattern wrote."""
    fsync: Latency | None
    """fsync latency (``sync.lat_ns``), when fsync was used."""
    usr_cpu_pct: float
    """fio's user CPU, percent of one CPU."""
    sys_cpu_pct: float
    """fio's system CPU, percent of one CPU."""
    disk_util: tuple[DiskUtil, ...]
    """What the devices served."""
    hints: tuple[Hint, ...] = ()
    """Interpretation rules that fired."""
    placement: str = ""
    """Where the result sits among :data:`DEVICE_CLASSES`."""
    notes: tuple[str, ...] = ()
    """Facts about the run itself (engine fallback, size capped...)."""
    issuers: Issuers | None = None
    """Who issued the device's requests during the run, when the block tracer ran."""
    flush_write: BlockLatency | None = None
    """Device-side latency of the writes that carried a preflush or FUA (a filesystem's
    journal commits, fio's fsyncs on some devices), from submission to the end of the whole
    flush sequence; kept apart from :attr:`write`'s plain writes. Block tracer only."""
    flush: BlockLatency | None = None
    """Device-side latency of the flush requests themselves (a preflush, an fsync's empty
    flush). Block tracer only."""
    host_cpu_some_pct: float | None = None
    """CPU pressure (``/proc/pressure/cpu`` some, the share of the run's wall time in which
    some task waited for a CPU), when the kernel reports it."""

    @property
    def directions(self) -> tuple[DirectionResult, ...]:
        """The directions that did I/O."""
        return tuple(d for d in (self.read, self.write) if d is not None)

    @property
    def iops(self) -> float:
        """Reads plus writes per second."""
        return sum(d.iops for d in self.directions)

    @property
    def bw_kib_s(self) -> int:
        """Read plus write bandwidth in KiB/s."""
        return sum(d.bw_kib_s for d in self.directions)

    @property
    def mean_clat_us(self) -> float:
        """Completion latency averaged over every I/O of both directions."""
        ios = sum(d.total_ios for d in self.directions)
        if not ios:
            return 0.0
        return sum(d.clat.mean_us * d.total_ios for d in self.directions) / ios

    @property
    def is_quick(self) -> bool:
        """Shorter than the minimum for a number worth quoting."""
        return self.params.is_quick

    @property
    def quick_label(self) -> str:
        """The quick-probe caveat, or empty."""
        if not self.is_quick:
            return ""
        low, high = QUOTE_RUNTIME_S
        return f"quick probe ({self.params.runtime_s} s): run {low}-{high} s for numbers you quote"


def hints_for(result: ProbeResult, preset: Preset, rotational: bool | None = None) -> list[Hint]:
    """The interpretation rules, applied to the numbers."""
    out: list[Hint] = []
    p = result.params
    starved = cpu_starved(result)
    if starved:
        out.append(
            Hint(
                "cpu-starved",
                f"the host was short of CPU during the probe (CPU pressure: some task waited "
                f"for a CPU {result.host_cpu_some_pct:.0f}% of the time): fio's latency and "
                "stalls include those waits, so they say little about the device; probe again "
                "when the host is quieter",
            )
        )
    for d, label in ((result.read, "read"), (result.write, "write")):
        if d is None or starved:  # a starved CPU explains jitter and stalls: blame nobody else
            continue
        p99 = d.clat.percentile("p99")
        p9999 = d.clat.percentile("p99.99")
        if p99 and p9999 and p9999 >= 5 * p99 and p9999 - p99 >= 200:
            out.append(
                Hint(
                    "tail-jitter",
                    f"{label} p99.99 is {p9999 / p99:.0f}x p99 "
                    f"({us_or_ms(p9999)} vs {us_or_ms(p99)}): "
                    "rare long stalls, typical of SSD garbage collection or CPU "
                    "scheduling jitter",
                )
            )
        if d.bw_samples >= 2 and d.bw_mean_kib_s > 0 and d.bw_min_kib_s < 0.5 * d.bw_mean_kib_s:
            out.append(
                Hint(
                    "stalls",
                    f"{label} bandwidth fell to {d.bw_min_kib_s / d.bw_mean_kib_s:.0%} of its "
                    "average in some 500 ms samples: the device stalled (GC, write-back, "
                    "throttling or a neighbour)",
                )
            )
    if result.sys_cpu_pct > 30:
        engine = (
            "consider io_uring, which needs fewer system calls per I/O"
            if p.ioengine != "io_uring"
            else "the CPU, not the device, may be the limit"
        )
        out.append(Hint("sys-cpu", f"fio spent {result.sys_cpu_pct:.0f}% in the kernel: {engine}"))
    if not p.direct:
        fio_ios = sum(d.total_ios for d in result.directions)
        served = sum(u.read_ios + u.write_ios for u in result.disk_util)
        cached = (result.disk_util and served < 0.5 * fio_ios) or (0 < result.mean_clat_us < 5)
        if cached:
            out.append(
                Hint(
                    "page-cache",
                    "buffered I/O (direct=0): "
                    + (
                        f"the device served {served} of {fio_ios} I/Os, "
                        if result.disk_util
                        else ""
                    )
                    + "so these numbers come from the page cache, faster than the device "
                    "could be; use direct=1 to measure the device",
                )
            )
    busy = other_io_note(
        "the probe",
        sum(d.total_ios for d in result.directions),
        sum(u.read_ios + u.write_ios for u in result.disk_util) if result.disk_util else None,
        direct=p.direct,
        fsync=bool(preset.fsync),
        issuers=result.issuers,
    )
    if busy:
        out.append(Hint("other-io", busy))
    if p.is_quick:
        out.append(Hint("short-runtime", result.quick_label))
    if preset.name != "wal" and p.total_qd < 8 and rotational is False:
        out.append(
            Hint(
                "low-qd",
                f"{p.total_qd} I/Os in flight is well below what an SSD or NVMe device needs "
                "to reach its peak (32 or more): this measures latency, not capacity",
            )
        )
    util = max((u.util_pct for u in result.disk_util), default=None)
    if util is not None and util < 50 and p.direct and preset.name not in ("wal",) and not starved:
        out.append(
            Hint(
                "idle-device",
                f"the device was busy only {util:.0f}% of the run: the probe, not the device, "
                "was the bottleneck (raise iodepth or numjobs)",
            )
        )
    return out


#: What a probe of a device that is not hardware measures, by device class (see
#: ``BlockDevice.device_class``). Comparing such a figure to NVMe or HDD datasheets misleads.
NOT_COMPARABLE: dict[str, str] = {
    "loop": "measures the loop device's backing file (and the page cache above it), not a "
    "disk: not compared with device classes",
    "virtual": "measures a virtual disk: the host decides its speed (its storage, cache and "
    "limits), so it is not compared with device classes",
    "ram": "measures memory (a RAM disk), not a disk: not compared with device classes",
    "zram": "measures compressed memory (zram), not a disk: not compared with device classes",
}


def place(result: ProbeResult, preset: Preset, device_class: str | None = None) -> str:
    """Where the result sits among :data:`DEVICE_CLASSES`, in one line.

    A loop, virtual or RAM device is not placed: the figure measures its backing file, the
    host or memory (:data:`NOT_COMPARABLE`).
    """
    if device_class in NOT_COMPARABLE:
        return f"{_shown(result, preset)} {NOT_COMPARABLE[device_class]}"
    if preset.fsync:
        return _place_latency(result)
    sequential = preset.rw in ("read", "write", "rw")
    if sequential:
        value = result.bw_kib_s * 1024 / 1e6
        unit = "MB/s"
    else:
        value = result.iops
        unit = "IOPS"

    def span(c: DeviceClass) -> tuple[float, float]:
        return c.bw_mb_s if sequential else c.iops

    within = [c.name for c in DEVICE_CLASSES if span(c)[0] <= value <= span(c)[1]]
    shown = f"{value:,.0f} {unit}"
    if within:
        return f"{shown} is typical of: {', '.join(within)}"
    top = max(DEVICE_CLASSES, key=lambda c: span(c)[1])
    if value > span(top)[1]:
        return f"{shown} is above every reference class (page cache or RAM-backed?)"
    below = [c for c in DEVICE_CLASSES if span(c)[1] < value]
    above = [c for c in DEVICE_CLASSES if span(c)[0] > value]
    if not below:
        why = _STARVED_WHY if cpu_starved(result) else "(a throttled or busy device?)"
        return f"{shown} is below every reference class {why}"
    low = max(below, key=lambda c: span(c)[1])
    high = min(above, key=lambda c: span(c)[0])
    return f"{shown} is between {low.name} and {high.name}"


def _shown(result: ProbeResult, preset: Preset) -> str:
    """The headline figure of a result, as :func:`place` names it."""
    if preset.fsync:
        value = result.fsync.mean_us if result.fsync else result.mean_clat_us
        return f"{us_or_ms(value)} mean {'fsync' if result.fsync else 'write'} latency"
    if preset.rw in ("read", "write", "rw"):
        return f"{result.bw_kib_s * 1024 / 1e6:,.0f} MB/s"
    return f"{result.iops:,.0f} IOPS"


def _place_latency(result: ProbeResult) -> str:
    """Commit probes are about latency: place the mean fsync (or write) latency."""
    value = result.fsync.mean_us if result.fsync else result.mean_clat_us
    what = "fsync" if result.fsync else "write"
    within = [c.name for c in DEVICE_CLASSES if c.latency_us[0] <= value <= c.latency_us[1]]
    shown = f"{us_or_ms(value)} mean {what} latency"
    if within:
        return f"{shown} is typical of: {', '.join(within)}"
    if value < min(c.latency_us[0] for c in DEVICE_CLASSES):
        return f"{shown} is faster than every reference class (a write cache acknowledges it)"
    if value > max(c.latency_us[1] for c in DEVICE_CLASSES):
        why = _STARVED_WHY if cpu_starved(result) else "(a busy or throttled device?)"
        return f"{shown} is slower than every reference class {why}"
    return f"{shown} falls between reference classes"


CPU_STARVED_PCT = 30.0
"""CPU pressure (``some``, percent of the run) from which a probe's figures are the host's:
fio waited for a CPU, not for the device."""
_STARVED_WHY = "(the host was short of CPU during the probe, not necessarily the device)"


def cpu_starved(result: ProbeResult) -> bool:
    """Whether the host was short of CPU while the probe ran (:data:`CPU_STARVED_PCT`)."""
    pct = result.host_cpu_some_pct
    return pct is not None and pct >= CPU_STARVED_PCT


def cpu_pressure_pct(
    before: tuple[float, int] | None, after: tuple[float, int] | None
) -> float | None:
    """CPU ``some`` pressure over an interval, in percent of its wall time.

    Args:
        before: (monotonic seconds, ``/proc/pressure/cpu`` some ``total`` µs) at the start.
        after: The same at the end.
    """
    if before is None or after is None:
        return None
    (t0, us0), (t1, us1) = before, after
    if t1 <= t0 or us1 < us0:
        return None
    return min(100.0, (us1 - us0) / ((t1 - t0) * 1e6) * 100)


OTHER_IO_SHARE = 0.10
"""The device serving this much more than fio issued (and :data:`OTHER_IO_MIN` more) means
someone else's I/O ran on it during the measurement."""
OTHER_IO_MIN = 100
"""I/Os of slack: a filesystem's own few metadata writes are not "other I/O"."""


def other_io_note(
    what: str,
    fio_ios: int | float,
    device_ios: int | float | None,
    *,
    direct: bool,
    fsync: bool = False,
    issuers: Issuers | None = None,
) -> str | None:
    """A line saying that other I/O hit the device during ``what`` (a step, a run), or None.

    With the block tracer (``issuers``): the requests issued by processes other than fio and
    the target filesystem's journal thread, against fio's own requests.

    Without it, the device's own counters (fio's ``disk_util``) against the I/Os fio issued:
    with direct I/O every fio I/O is at most one device request (merges only lower the
    count), so a clear excess is someone else's load, and the figures include it. Buffered
    runs (read-ahead, write-back) change the count by design and are not judged, and neither
    are runs with fsync: each fsync is a flush request that the kernel counts in the write
    fields as well as the flush fields, and a filesystem adds its journal commits.
    """
    if issuers is not None:
        others = issuers.other_requests
        own = max(issuers.fio, 1)
        if others <= OTHER_IO_MIN or others <= OTHER_IO_SHARE * own:
            return None
        named = issuers.others[:3]
        who = (
            named[0][0]
            if len(issuers.others) == 1
            else ", ".join(f"{name} ({n:,})" for name, n in named)
        )
        more = f" and {len(issuers.others) - 3} more" if len(issuers.others) > 3 else ""
        about = "about " if issuers.sampled > 1 else ""
        return (
            f"other I/O hit the device during {what}: {about}{others:,} requests from {who}{more}, "
            f"against fio's {issuers.fio:,} (+{others / own:.0%}); these figures include "
            "that load"
        )
    if not direct or fsync or device_ios is None or fio_ios <= 0:
        return None
    extra = device_ios - fio_ios
    if extra <= OTHER_IO_MIN or extra <= OTHER_IO_SHARE * fio_ios:
        return None
    return (
        f"other I/O hit the device during {what}: it served {device_ios:,.0f} I/Os, fio "
        f"issued {fio_ios:,.0f} (+{extra / fio_ios:.0%}); these figures include that load"
    )
