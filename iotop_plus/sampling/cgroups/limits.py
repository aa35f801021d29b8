"""Cgroup I/O limits in force, v1 and v2 alike, and whether a cgroup runs into them.

Formats accepted (``Documentation/admin-guide/cgroup-v1/blkio-controller.rst``): v1
``blkio.throttle.read_bps_device``, ``write_bps_device``, ``read_iops_device`` and
``write_iops_device``, one ``MAJ:MIN VALUE`` line per limited device (an empty file: no
limit; writing 0 removes one). v2's ``io.max`` is parsed in
:mod:`iotop_plus.sampling.cgroups.files`; both become :class:`IoLimits` with a ``source``.

A cgroup is *throttled* on a device when, over the interval, its I/O there ran at
:data:`THROTTLED_SHARE` (90 %) or more of one of its limits: v1 from
``blkio.throttle.io_serviced``/``io_service_bytes`` per second, v2 from ``io.stat``.

On cgroup v1 (and on a hybrid host, where blkio is v1) buffered writes are written back by
the flusher threads and charged to the root cgroup: a writer's own cgroup shows only its
direct I/O. :data:`V1_WRITEBACK_NOTE` says so, once, wherever cgroups are shown.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from iotop_plus.sampling.cgroups.files import IoLimits
from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupSample, IoRates
from iotop_plus.sampling.cgroups.v1_limits import BLKIO_THROTTLE, LIMIT_KEYS

THROTTLED_SHARE = 0.9
"""A cgroup using this share of a limit over the interval counts as throttled."""
IO_MAX = "io.max"
V1_WRITEBACK_NOTE = (
    "cgroup v1 blkio charges buffered writes to the root cgroup (the flusher writes them "
    "back): a writer's cgroup shows only its direct I/O"
)
"""Said once on v1 and hybrid hosts (``top --by cgroup`` stderr, the Cgroups tab)."""


def _used(rates: IoRates | None, key: str) -> float | None:
    if rates is None:
        return None
    return {
        "rbps": rates.read_bps,
        "wbps": rates.write_bps,
        "riops": rates.read_iops,
        "wiops": rates.write_iops,
    }[key]


@dataclass(frozen=True)
class DeviceLimit:
    """The limits one cgroup has on one device, and how much of them it used."""

    cgroup: str
    """The cgroup's path."""
    devno: str
    """``MAJ:MIN``."""
    device: str
    """The kernel name (``MAJ:MIN`` where unknown)."""
    limits: Mapping[str, int | None]
    """``rbps``, ``wbps``, ``riops``, ``wiops``; None: no limit."""
    source: str
    """``io.max`` or ``blkio.throttle``."""
    usage: Mapping[str, float]
    """Per limited key, the share of the limit used over the interval (1.0 = at the limit)."""

    @property
    def throttled(self) -> bool:
        """At :data:`THROTTLED_SHARE` of a limit or more over the interval."""
        return any(share >= THROTTLED_SHARE for share in self.usage.values())

    @property
    def binding(self) -> str | None:
        """The limit closest to being used up (``riops``), or None without rates."""
        if not self.usage:
            return None
        return max(self.usage, key=lambda k: self.usage[k])

    def as_json(self) -> dict[str, Any]:
        """The ``limits`` object of ``top --by cgroup``: the four limits and the source."""
        return {**{k: self.limits.get(k) for k in LIMIT_KEYS}, "source": self.source}

    def text(self) -> str:
        """``riops 100 (98 % used) on loop3 by /h2``."""
        key = self.binding or next(k for k in LIMIT_KEYS if self.limits.get(k) is not None)
        share = self.usage.get(key)
        used = f" ({share * 100:.0f} % used)" if share is not None else ""
        return f"{key} {self.limits.get(key)}{used} on {self.device} by {self.cgroup}"


def device_limits(
    sample: CgroupSample, rates: Mapping[str, CgroupRates | None] | None = None
) -> Iterator[DeviceLimit]:
    """Every (cgroup, device) with a limit in force, with its usage over the interval of
    ``rates`` (empty usage on the first sample)."""
    names = sample.device_names
    for path, stat in sample.cgroups.items():
        limits = stat.limits
        if limits is None or not limits.max:
            continue
        cgroup_rates = rates.get(path) if rates is not None else None
        for devno, keys in limits.max.items():
            dev_rates = cgroup_rates.devices.get(devno) if cgroup_rates is not None else None
            usage: dict[str, float] = {}
            for key in LIMIT_KEYS:
                limit = keys.get(key)
                used = _used(dev_rates, key)
                if limit and used is not None:
                    usage[key] = used / limit
            yield DeviceLimit(
                path,
                devno,
                names.get(devno, devno),
                {k: keys.get(k) for k in LIMIT_KEYS},
                limits.source,
                usage,
            )


def limits_doc(sample: CgroupSample) -> dict[str, Any]:
    """The limits in force as a recording stores them (type ``L``):
    ``{cgroup: {device: {rbps, wbps, riops, wiops, source}}}``, devices by kernel name (as
    the recorded cgroup figures are)."""
    doc: dict[str, Any] = {}
    for limit in device_limits(sample):
        doc.setdefault(limit.cgroup, {})[limit.device] = limit.as_json()
    return doc


def limits_from_doc(doc: Any) -> dict[str, IoLimits]:
    """A recorded ``L`` part back as :class:`IoLimits` per cgroup (wrong types are skipped)."""
    out: dict[str, IoLimits] = {}
    if not isinstance(doc, Mapping):
        return out
    for path, devices in doc.items():
        if not isinstance(path, str) or not isinstance(devices, Mapping):
            continue
        maxes: dict[str, Mapping[str, int | None]] = {}
        source = IO_MAX
        for devno, keys in devices.items():
            if not isinstance(devno, str) or not isinstance(keys, Mapping):
                continue
            values = {k: keys.get(k) for k in LIMIT_KEYS}
            if all(
                v is None or (isinstance(v, int) and not isinstance(v, bool))
                for v in values.values()
            ):
                maxes[devno] = values
                if keys.get("source") == BLKIO_THROTTLE:
                    source = BLKIO_THROTTLE
        if maxes:
            out[path] = IoLimits(maxes, source=source)
    return out
