"""The recorded latency part: per-device latency histograms, record letter ``Q``.

``record --latency`` keeps, with every sample, each device's read and write device-time
histograms since the previous sample, as the latency tracer measured them (the log-linear
buckets of :mod:`iotop_plus.sampling.latency.hist`), so a recording can give percentiles
later (``diff`` compares p99 between windows). The reader takes them from the frame's
:class:`~iotop_plus.sampling.latency.hist.LatencyFrame` (:attr:`ReadContext.latency`); the
tracer is the one the frame's latency already runs.

Recorded JSON: ``{"devices": {name: {"read": {"b": [[bucket, count], ...], "sum_ns",
"max_ns"}, "write": {...}}}, "sampled": {name: N}}`` (an operation without requests left out;
``sampled`` only for devices the tracer timed one request in N of).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.frame.part import FramePart, ReadContext
from iotop_plus.sampling.latency.hist import Histogram, LatencyFrame

if TYPE_CHECKING:
    from iotop_plus.roots import Roots

KEPT_OPS = ("read", "write")
"""The operations recorded (flush and discard latencies are not what p99 of I/O means)."""
MAX_BUCKETS = 64 * 8
"""Buckets one histogram can have (64 powers of two, 8 slices each); more is refused."""
MAX_DEVICES = 100_000
"""Devices one recorded document is read for, at most (the inventory's cap)."""
_MAX_COUNT = 1 << 62


@dataclass(frozen=True)
class LatencyHistograms:
    """Per device, per operation (:data:`KEPT_OPS`), the device-time histogram of one interval."""

    devices: Mapping[str, Mapping[str, Histogram]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    sampled: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Devices whose tracer timed one request in N (counts are then estimates)."""

    def combined(self, device: str) -> Histogram:
        """Reads and writes of ``device`` in one histogram (empty when none)."""
        out = Histogram()
        for hist in self.devices.get(device, {}).values():
            out = out.merged(hist)
        return out

    def p99_ms(self, device: str) -> float | None:
        """The 99th percentile of ``device``'s reads and writes, in ms; None without requests."""
        got = self.combined(device).percentile(99.0)
        return None if got is None else got / 1e6


def of_latency_frame(latency: LatencyFrame | None) -> LatencyHistograms | None:
    """The histograms of a frame's latency part; None while the tracer gives no figures."""
    if latency is None or not latency.has_figures:
        return None
    devices: dict[str, Mapping[str, Histogram]] = {}
    sampled: dict[str, int] = {}
    for name, dev in latency.devices.items():
        ops = {op: dev.ops[op].device for op in KEPT_OPS if op in dev.ops}
        ops = {op: h for op, h in ops.items() if h.buckets}
        if ops:
            devices[name] = MappingProxyType(ops)
            if dev.sampled > 1:
                sampled[name] = dev.sampled
    return LatencyHistograms(MappingProxyType(devices), MappingProxyType(sampled))


def _int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_COUNT:
        return value
    return None


def histogram_of(doc: Any) -> Histogram | None:
    """A histogram from its recorded JSON; None for anything of another shape."""
    if not isinstance(doc, dict) or not isinstance(doc.get("b"), list):
        return None
    rows = doc["b"]
    if len(rows) > MAX_BUCKETS:
        return None
    buckets: dict[int, int] = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 2:
            return None
        index, count = _int(row[0]), _int(row[1])
        if index is None or count is None or index >= MAX_BUCKETS:
            return None
        if count:
            buckets[index] = buckets.get(index, 0) + count
    return Histogram(
        MappingProxyType(buckets), _int(doc.get("sum_ns")) or 0, _int(doc.get("max_ns")) or 0
    )


def histogram_json(hist: Histogram) -> dict[str, Any]:
    """A histogram as recorded: sorted ``[bucket, count]`` pairs, the sum and the max."""
    return {
        "b": [[i, c] for i, c in sorted(hist.buckets.items())],
        "sum_ns": hist.sum_ns,
        "max_ns": hist.max_ns,
    }


def percentile_ms(device_doc: Any, rank: float) -> float | None:
    """The ``rank`` quantile (0-1) in ms of one device's recorded reads and writes together;
    None without requests or for a document of another shape."""
    if not isinstance(device_doc, dict):
        return None
    out = Histogram()
    for op in KEPT_OPS:
        hist = histogram_of(device_doc.get(op))
        if hist is not None:
            out = out.merged(hist)
    got = out.percentile(rank * 100.0)
    return None if got is None else got / 1e6


class _Reader:
    """Takes each frame's histograms from its latency part."""

    def read(self, ctx: ReadContext) -> tuple[LatencyHistograms | None, tuple[Any, ...]]:
        latency = ctx.latency
        return of_latency_frame(latency if isinstance(latency, LatencyFrame) else None), ()

    def close(self) -> None:
        """Nothing to release."""


class LatencyHistogramsPart(FramePart[LatencyHistograms]):
    """Per-device latency histograms, recorded with ``record --latency``."""

    key = "latency-histograms"
    letter = "Q"
    record_flag = "latency"
    wants = ("latency",)

    def reader(self, roots: Roots) -> _Reader:  # noqa: ARG002
        return _Reader()

    def to_json(self, value: LatencyHistograms) -> Any:
        doc: dict[str, Any] = {
            "devices": {
                name: {op: histogram_json(h) for op, h in ops.items()}
                for name, ops in value.devices.items()
            }
        }
        if value.sampled:
            doc["sampled"] = dict(value.sampled)
        return doc

    def from_json(self, doc: Any) -> LatencyHistograms | None:
        if not isinstance(doc, dict) or not isinstance(doc.get("devices"), dict):
            return None
        devices: dict[str, Mapping[str, Histogram]] = {}
        for name, ops in list(doc["devices"].items())[:MAX_DEVICES]:
            if not isinstance(ops, dict):
                continue
            got = {op: histogram_of(ops.get(op)) for op in KEPT_OPS if op in ops}
            kept = {op: h for op, h in got.items() if h is not None}
            if kept:
                devices[str(name)] = MappingProxyType(kept)
        sampled: dict[str, int] = {}
        raw = doc.get("sampled")
        if isinstance(raw, dict):
            for name, n in list(raw.items())[:MAX_DEVICES]:
                if str(name) in devices and _int(n):
                    sampled[str(name)] = int(n)
        return LatencyHistograms(MappingProxyType(devices), MappingProxyType(sampled))

    def disk_json(self, value: LatencyHistograms, device: str) -> Mapping[str, Any]:
        p99 = value.p99_ms(device)
        return {} if p99 is None else {"latency_p99_ms": round(p99, 4)}
