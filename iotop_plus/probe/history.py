"""The probes of this run, each with the device settings in force, compared two at a time.

The point is tuning: run ``randread`` with read-ahead 128, change it to 16, run again, and
see the deltas side by side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from iotop_plus.devices.settings import read_settings
from iotop_plus.probe.results import ProbeResult
from iotop_plus.roots import Roots

#: The queue settings recorded with each probe (those that change probe numbers most).
RECORDED_SETTINGS = ("scheduler", "read_ahead_kb", "nr_requests", "max_sectors_kb", "nomerges")


@dataclass(frozen=True)
class ProbeRecord:
    """One probe of this run and the device settings it ran under."""

    number: int
    """1, 2, 3... in the order run."""
    wall_time: float
    """When it finished (seconds since the epoch)."""
    result: ProbeResult
    """The figures."""
    settings: tuple[tuple[str, str], ...]
    """(setting, value) of the measured device's queue at the time, e.g. read_ahead_kb."""

    @property
    def label(self) -> str:
        """``#2 randread rd-ahead 16`` style: enough to tell records apart."""
        s = dict(self.settings)
        extra = []
        if "scheduler" in s:
            extra.append(s["scheduler"])
        if "read_ahead_kb" in s:
            extra.append(f"ra {s['read_ahead_kb']}")
        more = f" ({', '.join(extra)})" if extra else ""
        return f"#{self.number} {self.result.preset} {self.result.params.bs}{more}"


@dataclass(frozen=True)
class ComparisonRow:
    """One figure of two probes side by side."""

    label: str
    """What the figure is (``IOPS``, ``clat p99 µs``, ``read_ahead_kb``)."""
    a: str
    """The first probe's value, formatted."""
    b: str
    """The second probe's value, formatted."""
    delta: str
    """b - a, formatted with its sign and percentage, or empty when not numeric."""
    better: bool | None
    """True when b is better than a, False when worse, None when neither applies."""


def settings_in_force(roots: Roots, device: str | None) -> tuple[tuple[str, str], ...]:
    """The recorded settings of ``device`` now (empty for no device)."""
    if device is None:
        return ()
    values = read_settings(roots, device)
    return tuple(
        (v.setting.name, v.value)
        for v in values
        if v.setting.name in RECORDED_SETTINGS and v.value is not None
    )


@dataclass
class ProbeHistory:
    """Every probe result of this run, in order."""

    records: list[ProbeRecord] = field(default_factory=list)
    """The records, oldest first."""

    def add(self, result: ProbeResult, settings: tuple[tuple[str, str], ...] = ()) -> ProbeRecord:
        """Keep ``result`` with the settings it ran under; returns the new record."""
        record = ProbeRecord(len(self.records) + 1, time.time(), result, settings)
        self.records.append(record)
        return record

    def get(self, number: int) -> ProbeRecord | None:
        """The record numbered ``number``, or None."""
        if 1 <= number <= len(self.records):
            return self.records[number - 1]
        return None

    def __len__(self) -> int:
        return len(self.records)


def _figures(r: ProbeResult) -> list[tuple[str, float | None, bool]]:
    """(label, value, higher is better) for the comparable figures of a result."""
    rows: list[tuple[str, float | None, bool]] = [
        ("IOPS", r.iops, True),
        ("bandwidth KiB/s", float(r.bw_kib_s), True),
        ("mean clat µs", r.mean_clat_us, False),
    ]
    for name, d in (("read", r.read), ("write", r.write)):
        for label in ("p50", "p99", "p99.99"):
            value = d.clat.percentile(label) if d else None
            rows.append((f"{name} clat {label} µs", value, False))
    rows.append(("fsync mean µs", r.fsync.mean_us if r.fsync else None, False))
    rows.append(("sys CPU %", r.sys_cpu_pct, False))
    util = max((u.util_pct for u in r.disk_util), default=None)
    rows.append(("device util %", util, True))
    served = sum(u.read_ios + u.write_ios for u in r.disk_util) if r.disk_util else None
    rows.append(("device I/Os", float(served) if served is not None else None, True))
    return rows


def compare(a: ProbeRecord, b: ProbeRecord) -> tuple[ComparisonRow, ...]:
    """The figures and settings of two probes side by side, with b - a deltas."""
    rows: list[ComparisonRow] = [
        ComparisonRow("preset", a.result.preset, b.result.preset, "", None),
        ComparisonRow("target", a.result.target, b.result.target, "", None),
        ComparisonRow(
            "bs / QD x jobs",
            _shape(a.result),
            _shape(b.result),
            "",
            None,
        ),
        ComparisonRow("engine", a.result.params.ioengine, b.result.params.ioengine, "", None),
    ]
    sa, sb = dict(a.settings), dict(b.settings)
    for key in RECORDED_SETTINGS:
        if key in sa or key in sb:
            va, vb = sa.get(key, "-"), sb.get(key, "-")
            delta = "changed" if va != vb else ""
            rows.append(ComparisonRow(key, va, vb, delta, None))
    figures_b = _figures(b.result)
    for (label, fa, higher), (_, fb, _) in zip(_figures(a.result), figures_b, strict=True):
        if fa is None and fb is None:
            continue
        rows.append(_numeric_row(label, fa, fb, higher))
    return tuple(rows)


def _shape(r: ProbeResult) -> str:
    p = r.params
    return f"{p.bs} / {p.iodepth} x {p.numjobs}"


def _numeric_row(label: str, a: float | None, b: float | None, higher: bool) -> ComparisonRow:
    fa = _num(a)
    fb = _num(b)
    if a is None or b is None:
        return ComparisonRow(label, fa, fb, "", None)
    diff = b - a
    pct = f" ({diff / a:+.1%})" if a else ""
    better = None if diff == 0 else (diff > 0) == higher
    return ComparisonRow(label, fa, fb, f"{_signed(diff)}{pct}", better)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def _signed(value: float) -> str:
    return f"{value:+,.0f}" if abs(value) >= 100 else f"{value:+,.1f}"
