"""What one window of samples holds, summed up for ``diff``: figures, issuers, cgroups, events.

A :class:`WindowStats` takes a window's recorded samples one at a time (:meth:`WindowStats.add`)
and keeps, per device, a bounded sample of each figure's per-interval values (the iostat -x
formulas on the raw counters), the share of each issuer and cgroup of the device's I/O, the
pressure, the health readings, the limits and the events seen. Memory is bounded however long
the window is: each series keeps at most :data:`SERIES_CAP` values (every other one dropped,
and the stride doubled, when it fills), fewer when the window has many devices, so the whole
summary stays near :data:`VALUES_BUDGET` values.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.sampling.disks.diskstats import (
    IO_TICKS,
    MS_WRAP,
    READ_MS,
    READS,
    SECTORS_READ,
    SECTORS_WRITTEN,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
)
from iotop_plus.sampling.disks.sampler import Sample

FIGURES = ("iops", "mbps", "await", "aqu", "util", "p99")
"""The per-device figures compared: I/O per second, MB/s (10^6 B), await (ms, reads and
writes), aqu-sz, %util, and the p99 latency (ms) where the recording has latency histograms."""
SERIES_CAP = 512
"""Values one figure's series keeps at most (a longer window keeps an even spread of them)."""
VALUES_BUDGET = 4_000_000
"""Values every series of a window together keep at most (about 32 MB)."""
MAX_EVENTS = 10_000
"""Events one window keeps at most (the rest are left out)."""
MAX_DEVICES = 100_000
"""Devices a window keeps figures for, at most (the inventory's cap)."""
MAX_SHARE_DEVICES = 10_000
"""Devices a window keeps issuer and cgroup shares and health for, at most."""
MAX_KEYS = 1000
"""Issuers or cgroups one device's share table keeps at most (the busiest first seen)."""


ROLLUP_FIGURES = {"iops": "iops", "mbps": "mbps", "await": "await", "aqu": "aqu", "util": "util"}
"""Figure -> the roll-up's metric of it (:data:`~iotop_plus.record.chunks.ROLLUP_METRICS`)."""


def _at(values: Any, i: int) -> float | None:
    if isinstance(values, list) and i < len(values):
        v = values[i]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return None


class Series:
    """An evenly spread, bounded sample of one figure's per-interval values."""

    __slots__ = ("_skip", "_stride", "cap", "n", "values")

    def __init__(self, cap: int = SERIES_CAP) -> None:
        self.cap = max(8, cap)
        self.values = array("d")
        self.n = 0
        self._stride = 1
        self._skip = 0

    def add(self, value: float) -> None:
        self.n += 1
        if self._skip:
            self._skip -= 1
            return
        self.values.append(value)
        self._skip = self._stride - 1
        if len(self.values) >= 2 * self.cap:
            self.values = self.values[::2]
            self._stride *= 2
            self._skip = self._stride - 1


def median(values: Iterable[float]) -> float:
    """The median (0 for no values)."""
    s = sorted(values)
    if not s:
        return 0.0
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def mad(values: Iterable[float], centre: float) -> float:
    """The median absolute deviation from ``centre``."""
    return median(abs(v - centre) for v in values)


def interval_figures(
    before: tuple[int, ...], after: tuple[int, ...], dt: float
) -> tuple[float, ...]:
    """IOPS, MB/s, await (ms; NaN without I/O), aqu-sz and %util of one device over ``dt``
    seconds, with iostat -x's formulas (32-bit millisecond counters wrap)."""
    ios = (after[READS] - before[READS]) + (after[WRITES] - before[WRITES])
    sectors = (after[SECTORS_READ] - before[SECTORS_READ]) + (
        after[SECTORS_WRITTEN] - before[SECTORS_WRITTEN]
    )
    ms = (after[READ_MS] - before[READ_MS]) % MS_WRAP + (
        after[WRITE_MS] - before[WRITE_MS]
    ) % MS_WRAP
    tiq = (after[TIME_IN_QUEUE] - before[TIME_IN_QUEUE]) % MS_WRAP
    ticks = (after[IO_TICKS] - before[IO_TICKS]) % MS_WRAP
    return (
        ios / dt,
        sectors * 512 / 1e6 / dt,
        ms / ios if ios > 0 else math.nan,
        tiq / 1000 / dt,
        ticks / 10 / dt,
    )


@dataclass
class Shares:
    """Per key (an issuer or a cgroup), its summed I/O on one device and what it was seen as."""

    total: float = 0.0
    by_key: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, key: str, amount: float, evidence: Mapping[str, Any]) -> None:
        self.total += amount
        if key in self.by_key:
            self.by_key[key] += amount
        elif len(self.by_key) < MAX_KEYS:
            self.by_key[key] = amount
            self.evidence[key] = dict(evidence)

    def share(self, key: str) -> float:
        return self.by_key.get(key, 0.0) / self.total if self.total > 0 else 0.0


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _text(value: Any, limit: int = 200) -> str | None:
    return value[:limit] if isinstance(value, str) else None


@dataclass
class WindowStats:
    """A window of samples, summed up for comparison (see the module's docstring)."""

    start: float
    end: float
    intervals: int = 0
    devices: dict[str, dict[str, Series]] = field(default_factory=dict)
    first_devices: frozenset[str] | None = None
    last_devices: frozenset[str] = frozenset()
    issuers: dict[str, Shares] = field(default_factory=dict)
    issuer_samples: int = 0
    cgroups: dict[str, Shares] = field(default_factory=dict)
    cgroup_samples: int = 0
    pressure: dict[str, Series] = field(default_factory=dict)
    limits: Any = None
    health: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[float, Mapping[str, Any]]] = field(default_factory=list)
    latency_samples: int = 0
    per_minute: bool = False
    """The figures' values are per-minute means (from the roll-ups), not per interval."""
    _cap: int = SERIES_CAP

    def add(self, rs: RecordedSample, before: RecordedSample | None) -> None:
        """One sample; ``before`` is the sample just before it in the same file (None: the
        recorder was down in between, or it is the window's first)."""
        sample = rs.sample
        self._seen(frozenset(sample.counters))
        if before is not None:
            self._figures(before.sample, sample)
        docs: dict[str, Any] = dict(rs.parts)
        docs.update({"E": list(rs.events), "R": rs.pressure})
        self.add_docs(sample.wall_time, docs)

    def _seen(self, names: frozenset[str]) -> None:
        if self.first_devices is None:
            self.first_devices = names
            self._cap = max(8, min(SERIES_CAP, VALUES_BUDGET // max(1, 6 * len(names))))
        self.last_devices = names

    def add_docs(self, wall: float, docs: Mapping[str, Any]) -> None:
        """A sample's JSON records by type: ``E`` events, ``R`` pressure, the frame parts."""
        events = docs.get("E")
        if isinstance(events, list) and len(self.events) < MAX_EVENTS:
            self.events += [(wall, e) for e in events[:MAX_KEYS] if isinstance(e, dict)]
        self._parts(docs)
        if isinstance(docs.get("R"), dict):
            self._pressure(docs["R"])

    def add_rollup(self, doc: Mapping[str, Any]) -> None:
        """One chunk's per-minute roll-up (:meth:`RecordingFile.rollup`): each device's
        minute means become one value of its figures' series."""
        names = [str(n) for n in doc.get("devices") or ()]
        self._seen(frozenset(names))
        self.per_minute = True
        self.intervals += 1
        columns = {f: (doc.get(f) or {}).get("mean") or () for f in ROLLUP_FIGURES.values()}
        for d, name in enumerate(names):
            values = {f: _at(columns[key], d) for f, key in ROLLUP_FIGURES.items()}
            if any(v is None for v in values.values()):
                continue
            per = self._figure_table(name)
            if per is None:
                continue
            for figure, value in values.items():
                assert value is not None
                if figure != "await" or values["iops"]:
                    per[figure].add(value)

    def _figure_table(self, device: str) -> dict[str, Series] | None:
        """The device's series by figure (None past :data:`MAX_DEVICES` devices)."""
        per = self.devices.get(device)
        if per is None:
            if len(self.devices) >= MAX_DEVICES:
                return None
            per = self.devices[device] = {}
        if "iops" not in per:
            per.update({f: Series(self._cap) for f in FIGURES[:5]})
        return per

    def _figures(self, prev: Sample, cur: Sample) -> None:
        dt = cur.monotonic - prev.monotonic
        if not dt > 0:
            return
        self.intervals += 1
        old = prev.counters
        for name, after in cur.counters.items():
            before = old.get(name)
            if before is None or before[0] != after[0] or before[1] != after[1]:
                continue
            bv, av = before[3], after[3]
            if av[READS] < bv[READS] or av[WRITES] < bv[WRITES]:
                continue  # a counter reset: no honest figure for this interval
            iops, mbps, wait, aqu, util = interval_figures(bv, av, dt)
            per = self.devices.get(name)
            if per is None or "iops" not in per:
                per = self._figure_table(name)
                if per is None:
                    continue
            per["iops"].add(iops)
            per["mbps"].add(mbps)
            if not math.isnan(wait):
                per["await"].add(wait)
            per["aqu"].add(aqu)
            per["util"].add(util)

    def _parts(self, parts: Mapping[str, Any]) -> None:
        who = parts.get("W")
        if isinstance(who, dict) and isinstance(who.get("devices"), dict):
            self.issuer_samples += 1
            for device, rows in who["devices"].items():
                if isinstance(rows, list):
                    self._issuers(str(device), rows)
        cg = parts.get("C")
        if isinstance(cg, dict) and isinstance(cg.get("cgroups"), list):
            self.cgroup_samples += 1
            for row in cg["cgroups"]:
                if isinstance(row, dict) and isinstance(row.get("devices"), dict):
                    self._cgroup(row)
        if "L" in parts:
            self.limits = parts["L"]
        health = parts.get("H")
        if isinstance(health, dict):
            self._health(health)
        latency = parts.get("Q")
        if isinstance(latency, dict) and isinstance(latency.get("devices"), dict):
            self.latency_samples += 1
            self._latency(latency["devices"])

    def _issuers(self, device: str, rows: list[Any]) -> None:
        shares = self.issuers.get(device)
        if shares is None:
            if len(self.issuers) >= MAX_SHARE_DEVICES:
                return
            shares = self.issuers[device] = Shares()
        for row in rows:
            if not isinstance(row, dict):
                continue
            comm = _text(row.get("comm"), 64) or "?"
            kind = _text(row.get("kind"), 32)
            key = f"{comm} ({kind})" if row.get("pid") is None and kind else comm
            iops = _number(row.get("r/s")) + _number(row.get("w/s"))
            evidence = {
                "pid": row.get("pid") if isinstance(row.get("pid"), int) else None,
                "comm": comm,
                "cmdline": _text(row.get("cmdline")),
                "cgroup": _text(row.get("cgroup")),
            }
            shares.add(key, iops, evidence)

    def _cgroup(self, row: Mapping[str, Any]) -> None:
        path = _text(row.get("path"), 400) or "?"
        for device, figures in row["devices"].items():
            if not isinstance(figures, list) or len(figures) < 2:
                continue
            amount = _number(figures[0]) + _number(figures[1])
            shares = self.cgroups.get(str(device))
            if shares is None:
                if len(self.cgroups) >= MAX_SHARE_DEVICES:
                    continue
                shares = self.cgroups[str(device)] = Shares()
            shares.add(path, amount, {"cgroup": path})

    def _pressure(self, doc: Mapping[str, Any]) -> None:
        for resource in ("io", "memory", "cpu"):
            lines = doc.get(resource)
            if not isinstance(lines, dict):
                continue
            for kind in ("some", "full"):
                line = lines.get(kind)
                if isinstance(line, dict) and isinstance(line.get("avg10"), (int, float)):
                    key = f"{resource} {kind}"
                    got = self.pressure.get(key)
                    if got is None:
                        got = self.pressure[key] = Series(self._cap)
                    got.add(float(line["avg10"]))

    def _health(self, doc: Mapping[str, Any]) -> None:
        for key in ("new_errors", "grown"):
            per = doc.get(key)
            if isinstance(per, dict):
                for device, value in list(per.items())[:MAX_KEYS]:
                    if value and self._health_room(str(device)):
                        self.health.setdefault(str(device), {})[key] = value
        devices = doc.get("devices")
        if isinstance(devices, dict):
            for device, reading in list(devices.items())[:MAX_KEYS]:
                if (
                    isinstance(reading, dict)
                    and "passed" in reading
                    and self._health_room(str(device))
                ):
                    self.health.setdefault(str(device), {})["passed"] = reading["passed"]

    def _health_room(self, device: str) -> bool:
        return device in self.health or len(self.health) < MAX_SHARE_DEVICES

    def _latency(self, devices: Mapping[str, Any]) -> None:
        from iotop_plus.sampling.latency.hist_part import percentile_ms

        for device, hist in list(devices.items())[:MAX_KEYS]:
            p99 = percentile_ms(hist, 0.99)
            per = self._figure_table(str(device)) if p99 is not None else None
            if per is not None and p99 is not None:
                if "p99" not in per:
                    per["p99"] = Series(self._cap)
                per["p99"].add(p99)


def window_stats(
    samples: Iterable[tuple[RecordedSample, RecordedSample | None]], start: float, end: float
) -> WindowStats:
    """The summary of ``samples`` (each with the sample before it in the same file, or None)."""
    stats = WindowStats(start, end)
    for rs, before in samples:
        stats.add(rs, before)
    return stats
