"""The sync part of a frame: how long fsync and fdatasync took, per device, process and file.

Traced only (the probes and what they time: :mod:`~iotop_plus.sampling.sync.program`). A
sync counts on the device of the filesystem it was on; a partition's syncs count on its
whole disk. ``O_SYNC``/``O_DSYNC`` writes make no sync call and are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from iotop_plus.sampling.frame.part import FramePart, Metric, ReadContext, TraceProgram
from iotop_plus.sampling.latency.hist import Histogram, bucket_bounds
from iotop_plus.sampling.sync.files import (
    FileNames,
    kdev_names,
    mount_of,
    whole_disk,
)
from iotop_plus.sampling.sync.program import (
    BY_FD,
    CALL_NAMES,
    SyncTraced,
    sync_trace_program,
    tracepoint_groups,
)
from iotop_plus.text import printable

if TYPE_CHECKING:
    from iotop_plus.roots import Roots

FILES_KEPT = 16
"""Files listed per device and frame (most syncs first)."""
METRIC_BOUNDS_NS: tuple[int, ...] = tuple(1 << k for k in range(13, 34))
"""The metric's bucket bounds: powers of two from 8.192 µs to 8.6 s (they fall on the
tracer's bucket edges, so each count is exact)."""


@dataclass(frozen=True)
class FileSync:
    """One process's syncs of one file over the frame."""

    path: str
    """The path as the process sees it, or ``inode N on MOUNT`` (as the kernel gave it:
    outputs pass it through ``printable``)."""
    pid: int
    comm: str
    hist: Histogram


@dataclass(frozen=True)
class DeviceSync:
    """One device's syncs over the frame, and since the reader started (for the metric)."""

    calls: Mapping[str, Histogram]
    """``fsync`` and ``fdatasync`` over the frame (only calls seen)."""
    files: tuple[FileSync, ...] = ()
    """The files synced most (at most :data:`FILES_KEPT`)."""
    totals: Mapping[str, Histogram] = field(default_factory=lambda: MappingProxyType({}))
    """Every sync since the reader started, per call."""

    @property
    def all(self) -> Histogram:
        """Both calls in one histogram."""
        out = Histogram()
        for hist in self.calls.values():
            out = out.merged(hist)
        return out


@dataclass(frozen=True)
class SyncFrame:
    """The sync part's value."""

    devices: Mapping[str, DeviceSync]
    traced: bool
    """False: nothing is known (``status`` says why); True: a device not in ``devices``
    had no sync."""
    status: str | None = None


class SyncReader:
    """Gives each frame the syncs the tracer saw, by device and file."""

    def __init__(self, roots: Roots) -> None:
        self._names = FileNames(roots.proc)
        self._totals: dict[tuple[str, str], Histogram] = {}

    def read(self, ctx: ReadContext) -> tuple[SyncFrame | None, tuple[Any, ...]]:
        if not isinstance(ctx.traced, SyncTraced):
            status = ctx.tracer_status or "sync latency needs the tracer (root and bpftrace)"
            return SyncFrame(MappingProxyType({}), False, status), ()
        names = kdev_names(ctx.sample)
        calls: dict[str, dict[str, Histogram]] = {}
        files: dict[str, dict[tuple[str, int], FileSync]] = {}
        for (dev, ino, pid, call), stat in ctx.traced.stats.items():
            if call & BY_FD:
                found = self._names.descriptor(pid, ino)
                if found is None:
                    continue  # closed already: its file system is unknown
                dev, ino, path = found
            name = names.get(dev)
            if name is None:
                continue  # not a block device's filesystem (tmpfs, NFS, FUSE)
            if not call & BY_FD:
                path = (
                    self._names.path(dev, ino, pid)
                    or f"inode {ino} on {mount_of(name, ctx.inventory)}"
                )
            disk = whole_disk(name, ctx.inventory)
            kind = CALL_NAMES[call & 1]
            mine = calls.setdefault(disk, {})
            mine[kind] = mine[kind].merged(stat.hist) if kind in mine else stat.hist
            total = self._totals.get((disk, kind), Histogram())
            self._totals[(disk, kind)] = total.merged(stat.hist)
            by = files.setdefault(disk, {})
            seen = by.get((path, pid))
            by[(path, pid)] = FileSync(
                path,
                pid,
                stat.comm,
                stat.hist if seen is None else seen.hist.merged(stat.hist),
            )
        devices = {}
        for disk in sorted(set(calls) | {d for d, _ in self._totals}):
            kept = sorted(files.get(disk, {}).values(), key=lambda f: (-f.hist.count, f.path))
            devices[disk] = DeviceSync(
                MappingProxyType(calls.get(disk, {})),
                tuple(kept[:FILES_KEPT]),
                MappingProxyType({k: h for (d, k), h in self._totals.items() if d == disk}),
            )
        return SyncFrame(MappingProxyType(devices), True), ()

    def close(self) -> None:
        """Nothing to release."""


def _us(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1000.0, 1)


def hist_json(hist: Histogram) -> dict[str, Any]:
    """A histogram as recorded: buckets (index to count), sum and max in ns."""
    return {
        "b": {str(k): v for k, v in sorted(hist.buckets.items())},
        "sum": hist.sum_ns,
        "max": hist.max_ns,
    }


def hist_from_json(doc: Any) -> Histogram | None:
    """The histogram :func:`hist_json` wrote; None when ``doc`` is not one."""
    if not isinstance(doc, dict) or not isinstance(doc.get("b"), dict):
        return None
    buckets: dict[int, int] = {}
    for k, v in doc["b"].items():
        if not isinstance(k, str) or not k.isdigit() or type(v) is not int or v <= 0:
            return None
        index = int(k)
        if index >= 64 * 8:
            return None
        buckets[index] = v
    total, top = doc.get("sum"), doc.get("max")
    if type(total) is not int or type(top) is not int or total < 0 or top < 0:
        return None
    return Histogram(MappingProxyType(buckets), total, top)


def sync_summary(dev: DeviceSync) -> dict[str, Any]:
    """``disk[].sync`` of ``snapshot`` JSON."""
    hist = dev.all
    return {
        "count": hist.count,
        "p50_us": _us(hist.percentile(50.0)),
        "p99_us": _us(hist.percentile(99.0)),
        "max_us": _us(float(hist.max_ns)) if hist.count else None,
        "by_file": [
            {
                "path": printable(f.path),
                "pid": f.pid,
                "comm": printable(f.comm),
                "count": f.hist.count,
                "p99_us": _us(f.hist.percentile(99.0)),
            }
            for f in dev.files
        ],
    }


class SyncPart(FramePart[SyncFrame]):
    """fsync and fdatasync latency per device, process and file (traced)."""

    key: ClassVar[str] = "sync"
    letter: ClassVar[str | None] = "Y"
    record_flag: ClassVar[str | None] = "sync"
    live_only: ClassVar[bool] = True

    def reader(self, roots: Roots) -> SyncReader:
        return SyncReader(roots)

    def trace(self, roots: Roots) -> TraceProgram | None:
        return sync_trace_program(tracepoint_groups(roots.sys))

    def to_json(self, value: SyncFrame) -> Any:
        return {
            "traced": value.traced,
            "status": value.status,
            "devices": {
                name: {
                    "calls": {k: hist_json(h) for k, h in dev.calls.items()},
                    "files": [[f.path, f.pid, f.comm, hist_json(f.hist)] for f in dev.files],
                    "totals": {k: hist_json(h) for k, h in dev.totals.items()},
                }
                for name, dev in value.devices.items()
            },
        }

    def record_json(self, value: SyncFrame) -> Any:
        """As :meth:`to_json` without the running totals (only ``serve`` exports them) and
        the devices with no sync in the frame."""
        doc = self.to_json(value)
        doc["devices"] = {
            name: {k: v for k, v in d.items() if k != "totals"}
            for name, d in doc["devices"].items()
            if d["calls"]
        }
        return doc

    def from_json(self, doc: Any) -> SyncFrame | None:
        if not isinstance(doc, dict) or not isinstance(doc.get("devices"), dict):
            return None
        status = doc.get("status")
        devices: dict[str, DeviceSync] = {}
        for name, d in doc["devices"].items():
            if not isinstance(name, str) or not isinstance(d, dict):
                return None
            calls = _calls(d.get("calls"))
            totals = _calls(d.get("totals", {}))
            files = _files(d.get("files"))
            if calls is None or totals is None or files is None:
                return None
            devices[name] = DeviceSync(calls, files, totals)
        return SyncFrame(
            MappingProxyType(devices),
            doc.get("traced") is True,
            status if isinstance(status, str) else None,
        )

    def disk_json(self, value: SyncFrame, device: str) -> Mapping[str, Any]:
        if not value.traced:
            return {"sync": None}
        dev = value.devices.get(device)
        return {"sync": sync_summary(dev if dev is not None else DeviceSync(MappingProxyType({})))}

    def metrics(self, value: SyncFrame) -> Iterable[Metric]:
        for name, dev in sorted(value.devices.items()):
            for call, hist in sorted(dev.totals.items()):
                yield Metric(
                    "iotop_plus_disk_sync_duration_seconds",
                    "histogram",
                    "Time fsync and fdatasync took on the device's filesystems (traced).",
                    {"device": name, "call": call},
                    metric_buckets(hist),
                )


def metric_buckets(hist: Histogram) -> dict[str, float]:
    """Cumulative counts by upper bound in seconds (:data:`METRIC_BOUNDS_NS`), ``+Inf`` and
    ``sum``, as :class:`~iotop_plus.sampling.frame.part.Metric` holds a histogram."""
    out: dict[str, float] = {}
    items = sorted(hist.buckets.items())
    for bound in METRIC_BOUNDS_NS:
        out[f"{bound / 1e9:g}"] = float(sum(c for i, c in items if bucket_bounds(i)[1] <= bound))
    out["+Inf"] = float(hist.count)
    out["sum"] = hist.sum_ns / 1e9
    return out


def _calls(doc: Any) -> Mapping[str, Histogram] | None:
    if not isinstance(doc, dict):
        return None
    out = {}
    for k, v in doc.items():
        hist = hist_from_json(v)
        if k not in CALL_NAMES or hist is None:
            return None
        out[k] = hist
    return MappingProxyType(out)


def _files(doc: Any) -> tuple[FileSync, ...] | None:
    if not isinstance(doc, list):
        return None
    out = []
    for item in doc[:FILES_KEPT]:
        if not isinstance(item, list) or len(item) != 4:
            return None
        path, pid, comm, h = item
        hist = hist_from_json(h)
        if (
            not isinstance(path, str)
            or type(pid) is not int
            or not isinstance(comm, str)
            or hist is None
        ):
            return None
        out.append(FileSync(path, pid, comm, hist))
    return tuple(out)
