"""Log-linear latency histograms and the per-device latency part of a frame.

Pure data and arithmetic (no textual, no rich, no processes): the tracer in
:mod:`iotop_plus.sampling.latency.part` fills these, the views and ``snapshot`` read them.

A bucket is a power of two split into :data:`SUB_BUCKETS` equal slices, the layout HdrHistogram
and bpftrace-based tools use: bucket ``(exp, sub)`` holds values ``v`` with
``2**exp <= v < 2**(exp + 1)`` and ``(v >> (exp - SUB_BITS)) & (SUB_BUCKETS - 1) == sub``.
Each bucket is at most 1/8 of its lower bound wide, so a percentile read at the bucket's
midpoint is within about 6 % of the exact one (the tracer's plain ``hist()`` is log2 only:
up to 100 % off).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

SUB_BITS = 3
"""Bits below the top bit that choose the sub-bucket."""
SUB_BUCKETS = 1 << SUB_BITS
"""Sub-buckets per power of two (8: at least the 4 the issue asks for)."""

OPS: tuple[str, ...] = ("read", "write", "flush", "discard")
"""The operations kept apart, in display order."""

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50_ms", 50.0),
    ("p90_ms", 90.0),
    ("p99_ms", 99.0),
    ("p999_ms", 99.9),
)
"""JSON keys of the percentiles ``snapshot --latency`` prints, and their ranks."""


def bucket_of(value_ns: int) -> int:
    """The bucket index (``exp * SUB_BUCKETS + sub``) of a latency in ns, as the tracer computes."""
    if value_ns < 1:
        return 0
    exp = value_ns.bit_length() - 1
    sub = (value_ns >> (exp - SUB_BITS)) & (SUB_BUCKETS - 1) if exp >= SUB_BITS else 0
    return exp * SUB_BUCKETS + sub


def bucket_index(exp: int, sub: int) -> int:
    """The index of bucket ``(exp, sub)`` as the tracer reports it."""
    if not 0 <= exp < 64 or not 0 <= sub < SUB_BUCKETS:
        raise ValueError(f"bucket ({exp}, {sub}) out of range")
    return exp * SUB_BUCKETS + sub


def bucket_bounds(index: int) -> tuple[int, int]:
    """``[low, high)`` in ns of a bucket index."""
    exp, sub = divmod(index, SUB_BUCKETS)
    if exp < SUB_BITS:  # too small to split: the whole power of two
        return 1 << exp, 1 << (exp + 1)
    width = 1 << (exp - SUB_BITS)
    low = (1 << exp) + sub * width
    return low, low + width


@dataclass(frozen=True)
class Histogram:
    """Counts of one operation's latencies over one interval, in log-linear buckets."""

    buckets: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    """Bucket index (see :func:`bucket_bounds`) to count; no zero counts."""
    sum_ns: int = 0
    """Sum of the latencies, for the mean."""
    max_ns: int = 0
    """Largest latency seen (exact, not a bucket bound); 0 when unknown."""

    @property
    def count(self) -> int:
        """Requests in the histogram."""
        return sum(self.buckets.values())

    @property
    def mean_ns(self) -> float | None:
        """Mean latency, or None with no requests."""
        n = self.count
        return self.sum_ns / n if n else None

    def percentile(self, rank: float) -> float | None:
        """The ``rank``-th percentile in ns (0 < rank <= 100), or None when empty.

        Interpolated linearly inside the bucket holding that rank, and never above the
        exact maximum.
        """
        n = self.count
        if not n:
            return None
        target = rank / 100.0 * n
        seen = 0
        for index in sorted(self.buckets):
            c = self.buckets[index]
            if seen + c >= target:
                low, high = bucket_bounds(index)
                frac = (target - seen) / c if c else 0.0
                value = low + (high - low) * min(max(frac, 0.0), 1.0)
                return min(value, float(self.max_ns)) if self.max_ns else value
            seen += c
        return float(self.max_ns or bucket_bounds(max(self.buckets))[1])

    def merged(self, other: Histogram) -> Histogram:
        """Both intervals' requests in one histogram."""
        if not other.buckets:
            return self
        if not self.buckets:
            return other
        out = dict(self.buckets)
        for index, c in other.buckets.items():
            out[index] = out.get(index, 0) + c
        return Histogram(
            MappingProxyType(out), self.sum_ns + other.sum_ns, max(self.max_ns, other.max_ns)
        )

    @classmethod
    def of(cls, values_ns: Iterable[int]) -> Histogram:
        """A histogram of exact values (tests, benchmarks)."""
        out: dict[int, int] = {}
        total = top = 0
        for v in values_ns:
            b = bucket_of(v)
            out[b] = out.get(b, 0) + 1
            total += v
            top = max(top, v)
        return cls(MappingProxyType(out), total, top)

    def summary(self) -> dict[str, float | int | None]:
        """``{"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "count"}``, as JSON prints it."""
        out: dict[str, float | int | None] = {}
        for key, rank in PERCENTILES:
            out[key] = _ms(self.percentile(rank))
        out["max_ms"] = _ms(float(self.max_ns)) if self.count else None
        out["count"] = self.count
        return out


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 3)


@dataclass(frozen=True)
class OpLatency:
    """One operation (read, write, flush, discard) on one device over one interval."""

    device: Histogram
    """Device time: issue to completion."""
    queue_sum_ns: int = 0
    """Total time requests waited in the scheduler (insert to issue)."""
    queue_count: int = 0
    """Requests seen going through the scheduler (insert then issue)."""

    def merged(self, other: OpLatency) -> OpLatency:
        """Both intervals together."""
        return OpLatency(
            self.device.merged(other.device),
            self.queue_sum_ns + other.queue_sum_ns,
            self.queue_count + other.queue_count,
        )


JOB_FLAG = 1 << 22
"""An issuer with this bit is a workqueue worker's job, not a pid (pids are below 2**22):
the low 22 bits are a hash of the work function and the work item, so each job (a bdi's
flusher, a loop device's worker for one cgroup, a queue's throttle dispatch) is an issuer of
its own, whichever kworker ran it. The tracer names each job it saw (:class:`KernelJob`)."""


@dataclass(frozen=True)
class KernelJob:
    """What a workqueue worker ran when it submitted (the tracer's ``@kw``)."""

    function: int
    """The work function's kernel address (``/proc/kallsyms`` names it)."""
    cgroup_id: int
    """The id of the blk cgroup the worker acted for (its kthread's ``blkcg_css``; 0: none)."""
    queue: str
    """Its workqueue's name (``loop3``, ``writeback``, ``kthrotld``; empty when unknown)."""


@dataclass(frozen=True)
class PidIO:
    """One issuer's requests on one device over one interval (the tracer's attribution)."""

    comm: str
    """The submitting task's name (``""`` when only its completions were seen)."""
    cgroup_id: int
    """The v2 cgroup id it submitted from (0 when unknown; 1 is usually the v2 root)."""
    ops: Mapping[str, OpLatency] = field(default_factory=lambda: MappingProxyType({}))
    """Device time of its requests that completed, per operation (counts are its IOPS)."""
    sectors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """512-byte sectors it submitted, per operation."""
    job: KernelJob | None = None
    """A worker's job (the issuer is a job, not a pid: see the tracer's ``JOB_FLAG``)."""

    def op(self, name: str) -> Histogram:
        """The device-time histogram of ``name`` (empty when not seen)."""
        found = self.ops.get(name)
        return found.device if found is not None else Histogram()

    def merged(self, other: PidIO) -> PidIO:
        """Both intervals together (the later comm and cgroup win where known)."""
        ops = dict(self.ops)
        for name, op in other.ops.items():
            ops[name] = ops[name].merged(op) if name in ops else op
        sectors = dict(self.sectors)
        for name, n in other.sectors.items():
            sectors[name] = sectors.get(name, 0) + n
        return PidIO(
            other.comm or self.comm,
            other.cgroup_id or self.cgroup_id,
            MappingProxyType(ops),
            MappingProxyType(sectors),
            other.job or self.job,
        )


@dataclass(frozen=True)
class DeviceLatency:
    """One device's latency over one interval, per operation."""

    ops: Mapping[str, OpLatency]
    """Keyed by the names in :data:`OPS` (a probe's tracer adds ``flush+write``); an
    operation not seen is absent."""
    issuers: Mapping[tuple[int, str], int] = field(default_factory=lambda: MappingProxyType({}))
    """Requests submitted, by issuer ``(pid, comm)``: only from a probe's tracer."""
    sampled: int = 1
    """The tracer timed one request in this many (chosen on the sector, see
    :func:`~iotop_plus.sampling.latency.program.sample_filter`): the histograms' counts
    and sums and :attr:`issuers` are estimates of all requests (the tracer weighs each timed
    one), the percentiles an unbiased sample, the max that of the sample; 1: every request."""

    def op(self, name: str) -> Histogram:
        """The device-time histogram of ``name`` (empty when not seen)."""
        found = self.ops.get(name)
        return found.device if found is not None else Histogram()

    @property
    def device_ms_mean(self) -> float | None:
        """Mean device time over every operation, in ms."""
        n = sum(o.device.count for o in self.ops.values())
        total = sum(o.device.sum_ns for o in self.ops.values())
        return round(total / n / 1e6, 4) if n else None

    @property
    def queue_ms_mean(self) -> float | None:
        """Mean scheduler-queue time of requests that went through the scheduler, in ms."""
        n = sum(o.queue_count for o in self.ops.values())
        total = sum(o.queue_sum_ns for o in self.ops.values())
        return round(total / n / 1e6, 4) if n else None

    def queue_share(self) -> float | None:
        """Fraction (0-1) of queue + device time spent in the queue; None without data.

        Queue time is summed over the requests that were queued, device time over all.
        """
        queue = sum(o.queue_sum_ns for o in self.ops.values())
        device = sum(o.device.sum_ns for o in self.ops.values())
        if queue + device <= 0:
            return None
        return queue / (queue + device)

    def merged(self, other: DeviceLatency) -> DeviceLatency:
        """Both intervals together."""
        out = dict(self.ops)
        for name, op in other.ops.items():
            out[name] = out[name].merged(op) if name in out else op
        who = dict(self.issuers)
        for key, n in other.issuers.items():
            who[key] = who.get(key, 0) + n
        return DeviceLatency(
            MappingProxyType(out), MappingProxyType(who), max(self.sampled, other.sampled)
        )

    def to_json(self) -> dict[str, object]:
        """The ``latency`` object of ``snapshot`` JSON (read and write always; flush and
        discard when seen; ``sampled`` when the tracer timed one request in N: the counts are
        then estimates of all requests)."""
        out: dict[str, object] = {}
        for name in OPS:
            if name in ("read", "write") or name in self.ops:
                out[name] = self.op(name).summary()
        out["queue_ms_mean"] = self.queue_ms_mean
        out["device_ms_mean"] = self.device_ms_mean
        if self.sampled > 1:
            out["sampled"] = self.sampled
        return out


LATENCY_CSV_COLUMNS: tuple[str, ...] = (
    "r_p50_ms",
    "r_p99_ms",
    "r_p999_ms",
    "r_max_ms",
    "w_p50_ms",
    "w_p99_ms",
    "w_p999_ms",
    "w_max_ms",
    "queue_ms_mean",
    "device_ms_mean",
)
"""The CSV columns ``snapshot --latency`` adds after the iostat ones."""


def csv_cells(latency: DeviceLatency | None) -> list[str]:
    """The :data:`LATENCY_CSV_COLUMNS` cells of one device (empty where unknown)."""
    if latency is None:
        return [""] * len(LATENCY_CSV_COLUMNS)
    cells: list[str] = []
    for op in ("read", "write"):
        s = latency.op(op).summary()
        cells += [_cell(s[k]) for k in ("p50_ms", "p99_ms", "p999_ms", "max_ms")]
    cells += [_cell(latency.queue_ms_mean), _cell(latency.device_ms_mean)]
    return cells


def _cell(value: float | int | None) -> str:
    return "" if value is None else f"{value:.3f}"


STARTING = "starting"
"""Tracer state: asked for, no interval traced yet."""
RUNNING = "running"
"""Tracer state: intervals arrive."""
FAILED = "failed"
"""Tracer state: cannot run or died; ``status`` says why."""


@dataclass(frozen=True)
class LatencyFrame:
    """The latency part of a frame: what the tracer saw since the previous frame."""

    state: str
    """:data:`STARTING`, :data:`RUNNING` or :data:`FAILED`."""
    devices: Mapping[str, DeviceLatency] = field(default_factory=lambda: MappingProxyType({}))
    """Per device name, the requests completed since the previous frame (the delta)."""
    status: str | None = None
    """One line for people: "starting tracer…", what is missing and how to get it, or why
    the tracer stopped; None while all is well."""
    span_s: float | None = None
    """The traced time the histograms cover (tracer ticks), None before the first."""
    notice: str | None = None
    """Something worth saying once (e.g. that tracefs was mounted); only on one frame."""
    partial: bool = False
    """The tracer's output for this frame's end did not come within 50 ms: the histograms end
    at its last output before, and the rest goes to the next frame."""
    attributed: bool = False
    """The tracer charged each request to its issuer (:attr:`issuers` is meaningful)."""
    issuers: Mapping[str, Mapping[int, PidIO]] = field(default_factory=lambda: MappingProxyType({}))
    """Per device name, per issuer: a submitting pid (0: no submission seen, e.g. kernel
    flushes) or a worker's job (its :attr:`PidIO.job`)."""
    errors: Mapping[tuple[str, str], int] | None = None
    """Failed requests per (device, kind) since the previous frame, while the tracer counts
    them (``block_rq_error``); None when it does not."""
    timed: bool = True
    """The tracer timed block requests (:attr:`devices` is meaningful); False while it traces
    only for the parts that add probes to it (no view shows latency)."""
    traced: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """Each traced part's value over the interval (its ``parse`` of every tick, added up
    with its ``merge``), by part key; a part with no value (no tick ended, or its output
    was not understood) is absent."""
    traced_status: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Why a traced part has no value, or only part of it (one line), by part key: the
    tracer is not running, or that part's output was not understood in some tick."""

    @property
    def starting(self) -> bool:
        """Whether the tracer is still starting (nothing traced yet)."""
        return self.state == STARTING

    @property
    def has_figures(self) -> bool:
        """Whether percentiles can be shown (the tracer delivered at least one interval)."""
        return self.state == RUNNING and self.span_s is not None
