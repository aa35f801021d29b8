"""What changed between two windows: one ranked list of changes, each with its evidence.

Figures (per device: IOPS, MB/s, await, aqu-sz, %util, p99; host-wide: PSI) move by an effect
size that weighs the shift against the spread inside each window::

    effect = (median_B - median_A) / spread
    spread = max(1.4826 * sqrt((MAD_A^2 + MAD_B^2) / 2),   the windows' pooled robust sd
                 5 % of the pooled median,
                 the figure's floor: 1 I/O/s, 0.01 MB/s, 0.1 ms, 0.1 queued, 1 %util,
                 1 % of PSI)

A figure changed when ``|effect| >= 3`` and the shift is at least 25 % of ``median_A`` (or of
the floor, when that is larger). A device's changed figures form one ``figure`` change, ranked
by its largest effect. Issuers and cgroups that appeared, vanished or changed their share of a
device's I/O, settings and limits that changed, devices that came or went, and health events
rank by their device's figure effect (they come just before it: a cause before what it
moved), else after every figure change.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from iotop_plus.record.window_stats import Series, Shares, WindowStats, mad, median

MIN_EFFECT = 3.0
"""The smallest |effect| that counts as a change."""
MIN_RELATIVE = 0.25
"""The smallest shift, relative to window A's median, that counts as a change."""
SPREAD_SHARE = 0.05
"""The spread used is at least this share of the pooled median."""
FLOORS = {
    "iops": 1.0,
    "mbps": 0.01,
    "await": 0.1,
    "aqu": 0.1,
    "util": 1.0,
    "p99": 0.1,
    "psi": 1.0,
}
"""The smallest spread per figure, so an idle device's figures do not explode."""
LABELS = {
    "iops": ("IOPS", ""),
    "mbps": ("throughput", " MB/s"),
    "await": ("await", " ms"),
    "aqu": ("aqu-sz", ""),
    "util": ("%util", " %"),
    "p99": ("p99", " ms"),
}
MIN_VALUES = 3
"""A figure is compared when each window has at least this many values of it."""
SHARE_SEEN = 0.05
"""An issuer or cgroup under this share of a device's I/O counts as absent."""
SHARE_NEW = 0.2
"""An issuer or cgroup that appeared or vanished had at least this share on the other side."""
SHARE_MOVED = 0.25
"""A change of share (0-1) this large counts."""
KIND_ORDER = ("setting", "limit", "device", "health", "issuer", "cgroup", "figure", "pressure")
"""Order of changes of equal effect: causes before the figures they moved."""


@dataclass
class Change:
    """One entry of the ranked list."""

    kind: str
    device: str | None
    what: str
    before: Any
    after: Any
    effect: float | None
    evidence: dict[str, Any] = field(default_factory=dict)
    at: float | None = None

    def json(self, rank: int) -> dict[str, Any]:
        return {
            "rank": rank,
            "kind": self.kind,
            "device": self.device,
            "what": self.what,
            "before": self.before,
            "after": self.after,
            "effect": None if self.effect is None else round(self.effect, 2),
            "evidence": self.evidence,
            "at": self.at,
        }


@dataclass(frozen=True)
class Shift:
    """One figure compared between the windows."""

    before: float
    after: float
    effect: float
    relative: float
    spread: float

    @property
    def significant(self) -> bool:
        return abs(self.effect) >= MIN_EFFECT and abs(self.relative) >= MIN_RELATIVE

    def json(self) -> dict[str, Any]:
        return {
            "before": _round(self.before),
            "after": _round(self.after),
            "effect": round(self.effect, 2),
            "relative": round(self.relative, 3),
            "spread": _round(self.spread),
        }


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def shift(a: Series | None, b: Series | None, floor: float) -> Shift | None:
    """The effect of moving from ``a``'s values to ``b``'s (None: too few values)."""
    if a is None or b is None or len(a.values) < MIN_VALUES or len(b.values) < MIN_VALUES:
        return None
    ma, mb = median(a.values), median(b.values)
    pooled = median([*a.values, *b.values])
    robust = 1.4826 * math.sqrt((mad(a.values, ma) ** 2 + mad(b.values, mb) ** 2) / 2)
    spread = max(robust, SPREAD_SHARE * abs(pooled), floor)
    return Shift(ma, mb, (mb - ma) / spread, (mb - ma) / max(abs(ma), floor), spread)


def _fmt(value: float, unit: str) -> str:
    return f"{value:.3g}{unit}"


def figure_changes(a: WindowStats, b: WindowStats) -> list[Change]:
    """One ``figure`` change per device whose figures moved."""
    out = []
    for device in sorted(set(a.devices) & set(b.devices)):
        shifts = {}
        for figure, series_a in a.devices[device].items():
            got = shift(series_a, b.devices[device].get(figure), FLOORS[figure])
            if got is not None:
                shifts[figure] = got
        moved = {f: s for f, s in shifts.items() if s.significant}
        if not moved:
            continue
        top = sorted(moved, key=lambda f: -abs(moved[f].effect))
        words = f"{device}: " + ", ".join(
            f"{LABELS[f][0]} {_fmt(moved[f].before, LABELS[f][1])} → "
            f"{_fmt(moved[f].after, LABELS[f][1])}"
            for f in top[:3]
        )
        out.append(
            Change(
                "figure",
                device,
                words,
                {f: _round(moved[f].before) for f in top},
                {f: _round(moved[f].after) for f in top},
                moved[top[0]].effect,
                {
                    "figures": {f: s.json() for f, s in shifts.items()},
                    "changed": top,
                    "intervals": [_count(a, device), _count(b, device)],
                },
            )
        )
    return out


def _count(stats: WindowStats, device: str) -> int:
    series = stats.devices[device].get("iops")
    return series.n if series is not None else 0


def pressure_changes(a: WindowStats, b: WindowStats) -> list[Change]:
    """PSI lines (``io some``, ``memory full``...) whose avg10 moved."""
    out = []
    for key in sorted(set(a.pressure) & set(b.pressure)):
        got = shift(a.pressure[key], b.pressure[key], FLOORS["psi"])
        if got is not None and got.significant:
            what = f"{key} pressure {got.before:.3g} % → {got.after:.3g} %"
            evidence = {"avg10": got.json()}
            out.append(Change("pressure", None, what, got.before, got.after, got.effect, evidence))
    return out


def _share_changes(kind: str, a: Mapping[str, Shares], b: Mapping[str, Shares]) -> list[Change]:
    out = []
    for device in sorted(set(a) | set(b)):
        sa, sb = a.get(device, Shares()), b.get(device, Shares())
        for key in sorted(set(sa.by_key) | set(sb.by_key)):
            before, after = sa.share(key), sb.share(key)
            if before < SHARE_SEEN and after >= SHARE_NEW:
                how = "appeared"
            elif after < SHARE_SEEN and before >= SHARE_NEW:
                how = "vanished"
            elif abs(after - before) >= SHARE_MOVED:
                how = "changed share"
            else:
                continue
            evidence = dict(sb.evidence.get(key) or sa.evidence.get(key) or {})
            evidence["share_before"] = round(before, 3)
            evidence["share_after"] = round(after, 3)
            evidence["how"] = how
            what = f"{kind} {key} on {device} {how} ({before:.0%} → {after:.0%} of its I/O)"
            out.append(
                Change(kind, device, what, round(before, 3), round(after, 3), None, evidence)
            )
    return out


def issuer_changes(a: WindowStats, b: WindowStats) -> list[Change]:
    """Issuers that appeared, vanished or changed their share of a device's I/O."""
    return _share_changes("issuer", a.issuers, b.issuers)


def cgroup_changes(a: WindowStats, b: WindowStats, issuers: Iterable[Change]) -> list[Change]:
    """Cgroups that appeared, vanished or changed share, without those an issuer change on
    the same device already names, and without the ancestors of a cgroup that changed the
    same way (the deepest one is the news)."""
    found = _share_changes("cgroup", a.cgroups, b.cgroups)
    named = {(c.device, c.evidence.get("cgroup")) for c in issuers}
    kept = []
    for c in found:
        path = str(c.evidence.get("cgroup"))
        if (c.device, path) in named:
            continue
        deeper = any(
            o is not c
            and o.device == c.device
            and str(o.evidence.get("cgroup")).startswith(path.rstrip("/") + "/")
            and (o.after > o.before) == (c.after > c.before)
            for o in found
        )
        if not deeper:
            kept.append(c)
    return kept


def limit_changes(a: WindowStats, b: WindowStats) -> list[Change]:
    """Cgroup I/O limits in force at the end of A and at the end of B that differ."""
    la = a.limits if isinstance(a.limits, dict) else {}
    lb = b.limits if isinstance(b.limits, dict) else {}
    out = []
    for cgroup in sorted(set(la) | set(lb), key=str)[:1000]:
        da, db = la.get(cgroup), lb.get(cgroup)
        da = da if isinstance(da, dict) else {}
        db = db if isinstance(db, dict) else {}
        for device in sorted(set(da) | set(db), key=str):
            before, after = da.get(device), db.get(device)
            if before == after:
                continue
            what = f"limit of {cgroup} on {device}: {_limit(before)} → {_limit(after)}"
            out.append(Change("limit", str(device), what, before, after, None, {"cgroup": cgroup}))
    return out


def _limit(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "none"
    parts = [f"{k}={doc[k]}" for k in ("rbps", "wbps", "riops", "wiops") if doc.get(k) is not None]
    return " ".join(parts) or "none"


def ranked(changes: list[Change]) -> list[Change]:
    """Biggest first: figures and pressure by their effect; the rest by their device's figure
    effect, just before it; what has no effect to go by comes last, by kind (settings and
    limits first, as :data:`KIND_ORDER`), then by time."""
    by_device = {c.device: abs(c.effect or 0.0) for c in changes if c.kind == "figure"}

    def key(c: Change) -> tuple[float, float, int, float]:
        if c.kind in ("figure", "pressure"):
            size: float | None = abs(c.effect or 0.0)
        else:
            size = by_device.get(c.device)
            c.effect = size
        order = KIND_ORDER.index(c.kind)
        if size is None:
            return (1, 0.0, order, c.at or 0.0)
        return (0, -size, order, 0.0)

    return sorted(changes, key=key)
