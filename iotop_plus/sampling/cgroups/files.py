"""Parsers of the cgroup I/O files, and the raw counters and limits they hold.

Formats accepted (``Documentation/admin-guide/cgroup-v2.rst``, ``cgroup-v1/blkio-controller.rst``):

* v2 ``io.stat``: one line per device, keyed ``MAJ:MIN``, in no order, then ``key=value``
  words: ``8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0``. A line
  with no keys (``253:0 ``) is legal. io.cost adds ``cost.*`` keys and io.latency adds
  ``depth``, ``avg_lat`` and ``win``: unknown keys are ignored.
* v2 ``io.max`` (``8:16 rbps=2097152 wbps=max riops=max wiops=120``), ``io.weight``
  (``default 100`` then ``8:16 200``), ``io.latency`` (``8:16 target=75000``).
* v1 ``blkio.throttle.io_service_bytes`` and ``io_serviced``: ``8:0 Read 4096`` per device
  and operation (Read, Write, Sync, Async, Discard, Total), then ``Total N``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotop_plus.text import cgroup_bytes

_IO_KEYS = ("rbytes", "wbytes", "rios", "wios", "dbytes", "dios")
_V1_OPS = {"Read": 0, "Write": 1, "Discard": 2}


@dataclass(frozen=True, slots=True)
class IoCounters:
    """Cumulative I/O of one cgroup on one device."""

    rbytes: int = 0
    """Bytes read."""
    wbytes: int = 0
    """Bytes written."""
    rios: int = 0
    """Read requests."""
    wios: int = 0
    """Write requests."""
    dbytes: int = 0
    """Bytes discarded."""
    dios: int = 0
    """Discard requests."""

    def __add__(self, other: IoCounters) -> IoCounters:
        return IoCounters(
            self.rbytes + other.rbytes,
            self.wbytes + other.wbytes,
            self.rios + other.rios,
            self.wios + other.wios,
            self.dbytes + other.dbytes,
            self.dios + other.dios,
        )


@dataclass(frozen=True)
class IoLimits:
    """The limits and weights in force in one cgroup (v2; v1's throttle limits in ``max``)."""

    max: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    """``io.max`` per device: ``rbps``/``wbps``/``riops``/``wiops`` (None: ``max``)."""
    weight: int | None = None
    """``io.weight``'s default weight."""
    device_weights: Mapping[str, int] = field(default_factory=dict)
    """``io.weight`` per device."""
    latency_us: Mapping[str, int] = field(default_factory=dict)
    """``io.latency`` target per device, in µs."""
    source: str = "io.max"
    """Where ``max`` comes from: ``io.max`` (v2) or ``blkio.throttle`` (v1's four files)."""

    @property
    def any(self) -> bool:
        """Whether anything is set beyond the default weight of 100."""
        return bool(self.max or self.device_weights or self.latency_us) or (
            self.weight is not None and self.weight != 100
        )

    def summary(self, device_names: Mapping[str, str] | None = None) -> str:
        """One short line: ``rbps=2M@vda w=200 lat=75ms@vda``; empty when nothing is set."""
        names = device_names or {}
        parts: list[str] = []
        for dev, keys in self.max.items():
            for key, value in keys.items():
                if value is not None:
                    parts.append(f"{key}={cgroup_bytes(value)}@{names.get(dev, dev)}")
        if self.weight is not None and self.weight != 100:
            parts.append(f"w={self.weight}")
        for dev, weight in self.device_weights.items():
            parts.append(f"w={weight}@{names.get(dev, dev)}")
        for dev, target in self.latency_us.items():
            parts.append(f"lat={target / 1000:g}ms@{names.get(dev, dev)}")
        return " ".join(parts)


def _is_devno(word: str) -> bool:
    major, sep, minor = word.partition(":")
    return bool(sep) and major.isdigit() and minor.isdigit()


_STANDARD_LINE = re.compile(
    r"^(\d+:\d+) rbytes=(\d+) wbytes=(\d+) rios=(\d+) wios=(\d+) dbytes=(\d+) dios=(\d+)$",
    re.MULTILINE | re.ASCII,
)


def _fast_io_line(words: list[str]) -> IoCounters | None:
    """``MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. dbytes=.. dios=..``, or None to look closer."""
    r, w, ri, wi, d, di = words[1:7]
    if not (
        r.startswith("rbytes=")
        and w.startswith("wbytes=")
        and ri.startswith("rios=")
        and wi.startswith("wios=")
        and d.startswith("dbytes=")
        and di.startswith("dios=")
        and _is_devno(words[0])
    ):
        return None
    try:
        values = (int(r[7:]), int(w[7:]), int(ri[5:]), int(wi[5:]), int(d[7:]), int(di[5:]))
    except ValueError:
        return None
    if min(values) < 0:
        return None
    return IoCounters(*values)


def parse_io_stat(text: str) -> tuple[dict[str, IoCounters], list[str]]:
    """A v2 ``io.stat``: counters per ``MAJ:MIN``, and the lines that could not be parsed.

    Unknown keys (``cost.*``, ``depth``, ``avg_lat``, ``win``) are ignored; a known key with
    a value that is not a non-negative integer makes the line a problem.
    """
    # The usual file: every line in the kernel's own order, nothing else. One regex pass.
    found = _STANDARD_LINE.findall(text)
    if found and len(found) == text.count("\n") + (not text.endswith("\n")):
        return {
            dev: IoCounters(int(r), int(w), int(ri), int(wi), int(d), int(di))
            for dev, r, w, ri, wi, d, di in found
        }, []
    out: dict[str, IoCounters] = {}
    bad: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) == 7:  # the usual line, keys in the kernel's order: no loop, no lookups
            fast = _fast_io_line(words)
            if fast is not None:
                out[words[0]] = fast
                continue
        if not _is_devno(words[0]):
            bad.append(f"not a MAJ:MIN line: {line.strip()[:80]!r}")
            continue
        values = [0, 0, 0, 0, 0, 0]
        ok = True
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep:
                ok = False
                break
            if key in _IO_KEYS:
                if not value.isdigit():
                    ok = False
                    break
                values[_IO_KEYS.index(key)] = int(value)
        if not ok:
            bad.append(f"malformed line: {line.strip()[:80]!r}")
            continue
        out[words[0]] = IoCounters(*values)
    return out, bad


def parse_v1_blkio(service_bytes: str, serviced: str) -> tuple[dict[str, IoCounters], list[str]]:
    """v1 ``blkio.throttle.io_service_bytes`` and ``io_serviced``: counters per ``MAJ:MIN``."""
    per: dict[str, list[int]] = {}
    bad: list[str] = []
    for text, offset in ((service_bytes, 0), (serviced, 3)):
        for line in text.splitlines():
            words = line.split()
            if not words or (words[0] == "Total" and len(words) == 2):
                continue
            if len(words) != 3 or not _is_devno(words[0]) or not words[2].isdigit():
                bad.append(f"malformed line: {line.strip()[:80]!r}")
                continue
            index = _V1_OPS.get(words[1])
            if index is None:
                continue  # Sync, Async, Total: sums of the others
            values = per.setdefault(words[0], [0, 0, 0, 0, 0, 0])
            values[offset + index] = int(words[2])
    out = {
        dev: IoCounters(v[0], v[1], v[3], v[4], v[2], v[5])  # (bytes r w d, ios r w d)
        for dev, v in per.items()
    }
    return out, bad


def v1_not_counted(
    stats: Mapping[str, Any], names: Mapping[str, str], sys_root: Path
) -> dict[str, str]:
    """v1: the whole devices (``MAJ:MIN`` -> why) that blkio does not count, from the rolled-up
    ``stats`` (``CgroupStat`` by path).

    The kernel counts ``blkio.throttle.io_service*`` only on devices where some cgroup has had a
    throttle rule since the device was attached; the root cgroup's file has a line exactly for
    those (rolled up, the root holds every line of the tree), and a rule in force now is one.
    Any other device's figure is not a 0: it is not counted.
    """
    root = stats.get("/")
    counted = set(root.devices) if root is not None and root.devices is not None else set()
    counted.update(d for s in stats.values() if s.limits is not None for d in s.limits.max)
    out = {}
    for devno, name in names.items():
        if devno in counted or (sys_root / "class" / "block" / name / "partition").exists():
            continue
        out[devno] = f"no throttle rule on {name} since it was attached"
    return out


def not_counted_line(not_counted: Mapping[str, str], names: Mapping[str, str]) -> str | None:
    """The one line that names the devices v1 blkio does not count; None when it counts all."""
    if not not_counted:
        return None
    devices = sorted(names.get(devno, devno) for devno in not_counted)
    more = f" and {len(devices) - 8} more" if len(devices) > 8 else ""
    return (
        f"not counted on {', '.join(devices[:8])}{more}: no throttle rule on them since they were"
        " attached (v1 blkio counts a device's I/O only once some cgroup limits it)"
    )


def _limit_value(value: str) -> int | None:
    if value == "max":
        return None
    if not value.isdigit():
        raise ValueError(value)
    return int(value)


def parse_limits(io_max: str | None, weight: str | None, latency: str | None) -> IoLimits:
    """``io.max``, ``io.weight`` and ``io.latency`` (each may be None: absent).

    Raises:
        ValueError: quoting the first line that is not in the kernel's format.
    """
    maxes = _parse_io_max(io_max or "")  # in this order: the first bad line is the one quoted
    default, weights = _parse_io_weight(weight or "")
    return IoLimits(maxes, default, weights, _parse_io_latency(latency or ""))


def _parse_io_max(text: str) -> dict[str, dict[str, int | None]]:
    """``io.max``: ``MAJ:MIN rbps=N wbps=max ...`` per line; devices with no limit set left out."""
    maxes: dict[str, dict[str, int | None]] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if not _is_devno(words[0]):
            raise ValueError(f"io.max: {line.strip()[:80]!r}")
        keys: dict[str, int | None] = {}
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep:
                raise ValueError(f"io.max: {line.strip()[:80]!r}")
            try:
                keys[key] = _limit_value(value)
            except ValueError:
                raise ValueError(f"io.max: {line.strip()[:80]!r}") from None
        if any(v is not None for v in keys.values()):
            maxes[words[0]] = keys
    return maxes


def _parse_io_weight(text: str) -> tuple[int | None, dict[str, int]]:
    """``io.weight``: ``default N`` and ``MAJ:MIN N`` lines; (the default, per device)."""
    default: int | None = None
    weights: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if len(words) != 2 or not words[1].isdigit():
            raise ValueError(f"io.weight: {line.strip()[:80]!r}")
        if words[0] == "default":
            default = int(words[1])
        elif _is_devno(words[0]):
            weights[words[0]] = int(words[1])
        else:
            raise ValueError(f"io.weight: {line.strip()[:80]!r}")
    return default, weights


def _parse_io_latency(text: str) -> dict[str, int]:
    """``io.latency``: ``MAJ:MIN target=N`` lines (``max`` or 0: no target)."""
    targets: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        key, sep, value = (words[1] if len(words) > 1 else "").partition("=")
        if not _is_devno(words[0]) or key != "target" or not sep:
            raise ValueError(f"io.latency: {line.strip()[:80]!r}")
        if value.isdigit() and int(value):
            targets[words[0]] = int(value)
        elif value != "max" and not value.isdigit():
            raise ValueError(f"io.latency: {line.strip()[:80]!r}")
    return targets
