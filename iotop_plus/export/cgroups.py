"""Per-cgroup I/O for ``serve``: the cgroups with I/O, up to ``--cgroup-depth`` below the root.

The kernel's counters are cumulative already (v2 ``io.stat`` includes the descendants; v1's are
summed by the reader), so they are exported as they are. A cgroup removed and made again starts
from zero: Prometheus sees a counter reset, which ``rate()`` handles.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, Metric

from iotop_plus.sampling.cgroups.files import IoCounters
from iotop_plus.sampling.cgroups.names import cgroup_name
from iotop_plus.sampling.frame.model import CgroupFrame

PREFIX = "iotop_plus_cgroup_"


@dataclass(frozen=True)
class CgroupSeries:
    """What one cgroup exports."""

    cgroup: str
    """Path under the cgroup root (``/`` for the root)."""
    name: str
    """The short name for people (unit, container, pod)."""
    devices: tuple[tuple[str, IoCounters], ...]
    """(device name, cumulative counters), by device name; ``MAJ:MIN`` when the name is not
    known."""
    waiting_s: float | None
    """``io.pressure`` some total in seconds; None without one."""


def depth_of(path: str) -> int:
    """Levels below the root: ``/`` is 0, ``/system.slice`` 1."""
    return 0 if path in ("", "/") else path.strip("/").count("/") + 1


class CgroupSelection:
    """Picks the exported cgroups from each frame (names cached: a path's name never changes)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self._names: dict[str, str] = {}

    def select(self, frame: CgroupFrame | None) -> tuple[CgroupSeries, ...]:
        """The cgroups of ``frame`` with I/O, no deeper than :attr:`depth`, by path."""
        if frame is None:
            return ()
        sample = frame.sample
        names = sample.device_names
        known = self._names
        seen: dict[str, str] = {}
        out: list[CgroupSeries] = []
        for path in sorted(sample.cgroups):
            stat = sample.cgroups[path]
            if stat.devices is None or depth_of(path) > self.depth:
                continue
            devices = tuple(
                sorted(
                    (names.get(devno, devno), c)
                    for devno, c in stat.devices.items()
                    if c.rios or c.wios or c.rbytes or c.wbytes
                )
            )
            if not devices:
                continue
            name = known.get(path)
            if name is None:
                name = cgroup_name(path)
            seen[path] = name
            some = stat.pressure.some if stat.pressure is not None else None
            waiting = some.total_us / 1e6 if some is not None else None
            out.append(CgroupSeries(path, name, devices, waiting))
        self._names = seen  # forget the cgroups that are gone
        return tuple(out)


_COUNTERS = (
    ("read_bytes", "Bytes read by the cgroup and its descendants, per device.", "bytes"),
    ("write_bytes", "Bytes written by the cgroup and its descendants, per device.", "bytes"),
    ("reads_completed", "Read requests of the cgroup and its descendants, per device.", ""),
    ("writes_completed", "Write requests of the cgroup and its descendants, per device.", ""),
)


def cgroup_families(series: tuple[CgroupSeries, ...]) -> Iterator[Metric]:
    """The four per-device counters and ``cgroup_pressure_waiting_seconds_total``."""
    if not series:
        return
    families = [
        CounterMetricFamily(PREFIX + name, help_, labels=("cgroup", "name", "device"), unit=unit)
        for name, help_, unit in _COUNTERS
    ]
    read_bytes, write_bytes, reads, writes = families
    waiting = CounterMetricFamily(
        PREFIX + "pressure_waiting_seconds",
        "Seconds in which at least one task of the cgroup waited for I/O (io.pressure some).",
        labels=("cgroup", "name"),
        unit="seconds",
    )
    for s in series:
        for device, c in s.devices:
            labels = (s.cgroup, s.name, device)
            read_bytes.add_metric(labels, c.rbytes)
            write_bytes.add_metric(labels, c.wbytes)
            reads.add_metric(labels, c.rios)
            writes.add_metric(labels, c.wios)
        if s.waiting_s is not None:
            waiting.add_metric((s.cgroup, s.name), s.waiting_s)
    yield from families
    yield waiting
