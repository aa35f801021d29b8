"""``diff``'s report: two summed-up windows and the events between them, as one ranked list.

:func:`compare` joins the figure, pressure, issuer and cgroup changes of
:mod:`iotop_plus.record.whatchanged` with the events: settings journal lines (with when and
who), queue settings that differ between the windows' recorded inventories (when no journal
line explains them), devices that came or went, and health and I/O error events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from iotop_plus.record.whatchanged import (
    Change,
    cgroup_changes,
    figure_changes,
    issuer_changes,
    limit_changes,
    pressure_changes,
    ranked,
)
from iotop_plus.record.window_stats import WindowStats
from iotop_plus.sampling.journal_events import record_wall_time
from iotop_plus.text import printable

MAX_EVENTS = 10_000
"""Events one report reads at most (the rest are counted, not listed)."""
QUEUE_SETTINGS = ("scheduler", "read_ahead_kb", "nr_requests")


@dataclass
class Report:
    """The ranked changes between window A and window B."""

    a: WindowStats
    b: WindowStats
    changes: list[Change]
    not_recorded: list[str]

    @property
    def quiet(self) -> bool:
        return not self.changes


def _journal_change(wall: float, doc: Mapping[str, Any]) -> Change | None:
    if doc.get("record") != "change" or "setting" not in doc:
        return None
    device = doc.get("queue_device") or doc.get("device") or None
    device = device if isinstance(device, str) else None
    setting = str(doc.get("setting"))
    old, new = doc.get("old"), doc.get("effective", doc.get("new"))
    kind = "limit" if setting.startswith(("io.", "blkio.")) else "setting"
    where = f"{device} " if device else ""
    what = f"{where}{setting} {old} → {new}"
    at = record_wall_time(doc) or wall
    evidence = {
        "who": doc.get("run") if isinstance(doc.get("run"), str) else None,
        "action": doc.get("action"),
        "journal": "changes",
    }
    side = doc.get("side_effects")
    if isinstance(side, list) and side:
        evidence["side_effects"] = [e for e in side[:20] if isinstance(e, dict)]
    return Change(kind, device, what, old, new, None, evidence, at)


def _device_event(wall: float, doc: Mapping[str, Any]) -> Change | None:
    kind, device = doc.get("kind"), doc.get("device")
    device = device if isinstance(device, str) else None
    text = str(doc.get("text") or kind)[:200]
    if kind in ("device-added", "device-removed"):
        came = kind == "device-added"
        return Change(
            "device",
            device,
            f"{device} {'came' if came else 'went'}",
            not came,
            came,
            None,
            {"event": text},
            wall,
        )
    if kind == "io-error":
        return Change(
            "health", device, f"I/O error: {text}", None, None, None, {"event": text}, wall
        )
    return None


def event_changes(events: Iterable[tuple[float, Mapping[str, Any]]]) -> list[Change]:
    """Settings, limits, devices and I/O errors from recorded events (``E`` records)."""
    out: list[Change] = []
    for wall, event in events:
        if not isinstance(event, Mapping):
            continue
        record = event.get("record")
        if event.get("source") == "changes" and isinstance(record, Mapping):
            got = _journal_change(wall, record)
        elif event.get("source") == "device":
            got = _device_event(wall, event)
        else:
            got = None
        if got is not None:
            out.append(got)
    return out


def queue_changes(
    before: Mapping[str, Any], after: Mapping[str, Any], known: Iterable[Change]
) -> list[Change]:
    """Queue settings that differ between two recorded inventories' ``queue`` objects, where
    no journal line already says so (someone wrote sysfs directly: who is unknown)."""
    seen = set()
    for c in known:
        seen.add((c.device, c.what.split(" ")[1] if c.device else ""))
        seen.update((c.device, e.get("setting")) for e in c.evidence.get("side_effects", ()))
    out = []
    for device in sorted(set(before) & set(after), key=str):
        qa, qb = before.get(device), after.get(device)
        if not isinstance(qa, dict) or not isinstance(qb, dict):
            continue
        for setting in QUEUE_SETTINGS:
            va, vb = qa.get(setting), qb.get(setting)
            if va != vb and (device, setting) not in seen:
                what = f"{device} {setting} {va} → {vb}"
                evidence = {"who": None, "source": "the recorded inventory"}
                out.append(Change("setting", str(device), what, va, vb, None, evidence))
    return out


def health_changes(a: WindowStats, b: WindowStats) -> list[Change]:
    """Devices whose error counts grew or whose self-test verdict changed between windows."""
    out = []
    for device in sorted(b.health):
        now, then = b.health[device], a.health.get(device, {})
        for key in ("new_errors", "grown"):
            if now.get(key) and now.get(key) != then.get(key):
                what = (
                    f"{device}: {'new I/O errors' if key == 'new_errors' else 'error figures grew'}"
                )
                out.append(
                    Change(
                        "health", device, what, then.get(key), now.get(key), None, {key: now[key]}
                    )
                )
        if "passed" in then and "passed" in now and then["passed"] != now["passed"]:
            what = f"{device}: health check {'passed' if now['passed'] else 'failed'}"
            out.append(Change("health", device, what, then["passed"], now["passed"], None, {}))
    return out


def compare(
    a: WindowStats,
    b: WindowStats,
    *,
    events: Iterable[tuple[float, Mapping[str, Any]]] = (),
    queue_before: Mapping[str, Any] | None = None,
    queue_after: Mapping[str, Any] | None = None,
) -> Report:
    """The ranked changes from ``a`` to ``b``; ``events`` are those from A's start to B's end."""
    changes = figure_changes(a, b) + pressure_changes(a, b)
    not_recorded = []
    if a.issuer_samples and b.issuer_samples:
        issuers = issuer_changes(a, b)
        changes += issuers
    else:
        issuers = []
        not_recorded.append("issuers")
    if a.cgroup_samples and b.cgroup_samples:
        changes += cgroup_changes(a, b, issuers)
    else:
        not_recorded.append("cgroups")
    if not (a.latency_samples and b.latency_samples):
        not_recorded.append("latency")
    if not (a.pressure and b.pressure):
        not_recorded.append("pressure")
    journal = event_changes(events)
    changes += journal + limit_changes(a, b) + health_changes(a, b)
    if queue_before is not None and queue_after is not None:
        changes += queue_changes(queue_before, queue_after, journal)
    came = b.last_devices - (a.first_devices or frozenset()) - a.last_devices
    went = (a.last_devices | (a.first_devices or frozenset())) - b.last_devices
    said = {(c.device, c.after) for c in journal if c.kind == "device"}
    for name in sorted(came):
        if (name, True) not in said:
            changes.append(Change("device", name, f"{name} came", False, True, None, {}))
    for name in sorted(went):
        if (name, False) not in said:
            changes.append(Change("device", name, f"{name} went", True, False, None, {}))
    return Report(a, b, ranked(changes), not_recorded)


def report_json(report: Report, source: str, version: str) -> dict[str, Any]:
    """The JSON document ``diff -f json`` prints."""
    return {
        "tool": "iotop-plus",
        "version": version,
        "from": source,
        "a": {"start": report.a.start, "end": report.a.end},
        "b": {"start": report.b.start, "end": report.b.end},
        "changes": [c.json(i) for i, c in enumerate(report.changes, 1)],
        "quiet": report.quiet,
        "not_recorded": report.not_recorded,
    }


def _when(wall: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(wall, tz).strftime("%Y-%m-%d %H:%M:%S")


def report_text(report: Report, tz: tzinfo, limit: int | None = None) -> list[str]:
    """The report as lines for people (every name through ``printable``)."""
    a, b = report.a, report.b
    lines = [
        f"A {_when(a.start, tz)} .. {_when(a.end, tz)}   "
        f"B {_when(b.start, tz)} .. {_when(b.end, tz)}"
    ]
    if report.quiet:
        lines.append("no significant change")
    shown = report.changes if limit is None else report.changes[:limit]
    for rank, c in enumerate(shown, 1):
        effect = f"{c.effect:+.1f}" if c.effect is not None else "   -"
        when = f"  at {_when(c.at, tz)}" if c.at is not None else ""
        who = c.evidence.get("who") if c.kind in ("setting", "limit") else None
        by = f" by {who}" if who else ""
        lines.append(printable(f"{rank:3d}. {c.kind:<8} {effect:>7}  {c.what}{when}{by}"))
    if limit is not None and len(report.changes) > limit:
        lines.append(f"     … {len(report.changes) - limit} more (-f json lists them all)")
    if report.not_recorded:
        lines.append("not recorded: " + ", ".join(report.not_recorded))
    return lines
