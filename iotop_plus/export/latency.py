"""Latency histograms for ``serve --latency``: each frame's delta, accumulated since start.

The tracer's histograms are log-linear (:mod:`iotop_plus.sampling.latency.hist`): 8 slices per
power of two of nanoseconds, so every power of two of ns is an exact bucket edge and a bucket
never straddles one. The exporter's buckets are those edges from 2**14 ns (16.4 µs) to 2**30 ns
(1.07 s), plus +Inf: a Prometheus bucket's count is then exact, not interpolated. (A request of
exactly 2**k ns counts in the next bucket up: the tracer's resolution is 1 ns.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from iotop_plus.sampling.latency.hist import SUB_BUCKETS, LatencyFrame

REQUEST_DURATION = "iotop_plus_disk_request_duration_seconds"
"""The latency histogram's name (the fleet view's p99 queries it)."""

LOW_EXP = 14
"""The first bucket's upper bound is 2**14 ns (16.384 µs)."""
HIGH_EXP = 30
"""The last finite bucket's upper bound is 2**30 ns (1.073741824 s)."""
EXPORTED_OPS = ("read", "write")
"""The operations exported (device time, for read and write)."""
BUCKET_BOUNDS_S: tuple[float, ...] = tuple((1 << k) / 1e9 for k in range(LOW_EXP, HIGH_EXP + 1))
"""The finite ``le`` bounds in seconds."""
_N = HIGH_EXP - LOW_EXP + 2  # finite buckets, then +Inf


@dataclass(frozen=True)
class OpTotals:
    """One device's one operation since ``serve`` started."""

    buckets: tuple[int, ...]
    """Non-cumulative counts per exported bucket (the last is above 2**30 ns)."""
    sum_ns: int
    """Device time of every request."""
    queue_sum_ns: int
    """Scheduler-queue time (insert to issue) of the requests that were queued."""

    @property
    def count(self) -> int:
        """Requests seen."""
        return sum(self.buckets)


def slot_of(index: int) -> int:
    """The exported bucket a log-linear bucket index falls in (0 .. HIGH_EXP - LOW_EXP + 1).

    Bucket ``index`` holds values in ``[2**exp, 2**(exp + 1))`` with ``exp = index // 8``, so
    it lies wholly below the edge ``2**(exp + 1)``.
    """
    upper = index // SUB_BUCKETS + 1
    return min(max(upper, LOW_EXP), HIGH_EXP + 1) - LOW_EXP


class LatencyTotals:
    """Adds each frame's latency delta into per (device, op) totals; series never vanish."""

    def __init__(self) -> None:
        self._totals: dict[tuple[str, str], OpTotals] = {}

    def add(self, latency: LatencyFrame | None) -> bool:
        """Add one frame's delta; whether anything changed."""
        if latency is None or not latency.devices:
            return False
        changed = False
        for device, dev in latency.devices.items():
            for op in EXPORTED_OPS:
                found = dev.ops.get(op)
                if found is None or (not found.device.buckets and not found.queue_sum_ns):
                    continue
                key = (device, op)
                old = self._totals.get(key)
                buckets = list(old.buckets) if old is not None else [0] * _N
                for index, count in found.device.buckets.items():
                    buckets[slot_of(index)] += count
                self._totals[key] = OpTotals(
                    tuple(buckets),
                    (old.sum_ns if old else 0) + found.device.sum_ns,
                    (old.queue_sum_ns if old else 0) + found.queue_sum_ns,
                )
                changed = True
        return changed

    def snapshot(self) -> Mapping[tuple[str, str], OpTotals]:
        """The totals now (a copy: the sampler keeps adding)."""
        return dict(self._totals)


def latency_families(
    totals: Mapping[tuple[str, str], OpTotals], devices: frozenset[str] | set[str]
) -> Iterator[Metric]:
    """``disk_request_duration_seconds`` (histogram) and ``disk_queue_time_seconds_total``."""
    if not totals:
        return
    histogram = HistogramMetricFamily(
        REQUEST_DURATION,
        "Device time of completed requests (issue to completion, block tracepoints), since "
        "serve started; buckets at powers of two of nanoseconds, 2^14 ns to 2^30 ns.",
        labels=("device", "op"),
        unit="seconds",
    )
    queue = CounterMetricFamily(
        "iotop_plus_disk_queue_time_seconds",
        "Time requests waited in the I/O scheduler (insert to issue), since serve started.",
        labels=("device", "op"),
        unit="seconds",
    )
    bounds = [*(floatToGoString(b) for b in BUCKET_BOUNDS_S), "+Inf"]
    for (device, op), t in sorted(totals.items()):
        if device not in devices:
            continue
        running = 0
        cumulative = []
        for le, c in zip(bounds, t.buckets, strict=True):
            running += c
            cumulative.append((le, running))
        histogram.add_metric((device, op), cumulative, t.sum_ns / 1e9)
        queue.add_metric((device, op), t.queue_sum_ns / 1e9)
    yield histogram
    yield queue
