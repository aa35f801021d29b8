"""Probe results, each with the device settings in force, compared two at a time.

The point is tuning: run ``randread`` with read-ahead 128, change it to 16, run again, and
see the deltas side by side. With a state directory the history outlives the run: each result
is one JSON line (``"record": "probe-result"``) in ``DIR/probes.jsonl`` (0600, O_NOFOLLOW, see
:mod:`iotop_plus.state`), and the last :data:`KEEP` are loaded at start.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iotop_plus.devices.settings import read_settings
from iotop_plus.probe.presets import ProbeParams
from iotop_plus.probe.results import (
    BlockLatency,
    DirectionResult,
    DiskUtil,
    Hint,
    Issuers,
    Latency,
    ProbeResult,
)
from iotop_plus.roots import Roots
from iotop_plus.state import PROBES, StateDir, StateError
from iotop_plus.text import grouped, grouped_signed

#: Results loaded from the state directory at start (the newest).
KEEP = 200
#: The ``record`` value of a probe result line in ``probes.jsonl``.
RESULT_RECORD = "probe-result"
EXPERIMENT_RECORD = "experiment-result"
"""A sweep's or an A/B's whole result (``kind``: ``sweep`` or ``ab``); its single fio runs
are ``probe-result`` lines of their own."""

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
        """The record's number after ``#``, then ``randread rd-ahead 16``: enough to tell
        records apart."""
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
    """Probe results in order: this run's, after those kept in the state directory."""

    records: list[ProbeRecord] = field(default_factory=list)
    """The records, oldest first."""
    state: StateDir | None = None
    """Where results are kept across runs; None keeps them in memory only."""
    notes: list[str] = field(default_factory=list)
    """Problems met loading or saving (skipped lines, an unusable file), one line each."""

    @classmethod
    def load(cls, state: StateDir | Path | None, keep: int = KEEP) -> ProbeHistory:
        """The history kept in ``state`` (its last ``keep`` results), ready to add to.

        Never raises: an unusable file or a line that does not parse is a note.
        """
        if isinstance(state, Path):
            state = StateDir(state)
        history = cls(state=state)
        if state is None:
            return history
        skipped: list[str] = []
        try:
            docs = [
                doc for doc in state.records(PROBES, skipped) if doc.get("record") == RESULT_RECORD
            ]
        except (StateError, OSError) as exc:
            history.notes.append(f"probe history not loaded: {exc}")
            return history
        bad = len(skipped)
        for doc in docs[-keep:] if keep > 0 else []:
            try:
                result = result_from_json(doc["result"])
                settings = tuple((str(k), str(v)) for k, v in doc.get("settings", []))
                wall = float(doc["time"])
            except (KeyError, TypeError, ValueError):
                bad += 1
                continue
            history.records.append(ProbeRecord(len(history.records) + 1, wall, result, settings))
        if bad:
            where = state.path / PROBES
            history.notes.append(
                f"{where}: skipped {bad} line{'s' if bad != 1 else ''} that did not parse"
            )
        return history

    def add(
        self,
        result: ProbeResult,
        settings: tuple[tuple[str, str], ...] = (),
        tags: dict[str, Any] | None = None,
    ) -> ProbeRecord:
        """Keep ``result`` with the settings it ran under (and append it to the state
        directory's file); returns the new record. ``tags`` go into the saved line beside the
        result (a plan's run: ``plan``, ``method``...). A failed save is a note, never an
        error: the probe's figures are still shown."""
        record = ProbeRecord(len(self.records) + 1, time.time(), result, settings)
        self.records.append(record)
        if self.state is not None:
            try:
                self.state.append(
                    PROBES,
                    {
                        "record": RESULT_RECORD,
                        "time": record.wall_time,
                        "result": asdict(result),
                        "settings": [list(pair) for pair in settings],
                        **(tags or {}),
                    },
                )
            except StateError as exc:
                self.notes.append(f"probe result not saved: {exc}")
        return record

    def add_experiment(self, kind: str, result: object) -> None:
        """Append a finished sweep's or A/B's result (a dataclass) to the state directory's
        file, so the recorder, the exporter and a later run see it. A failed save is a note."""
        if self.state is None:
            return
        try:
            self.state.append(
                PROBES,
                {
                    "record": EXPERIMENT_RECORD,
                    "kind": kind,
                    "time": time.time(),
                    "result": asdict(result),  # type: ignore[call-overload]
                },
            )
        except StateError as exc:
            self.notes.append(f"{kind} result not saved: {exc}")

    def get(self, number: int) -> ProbeRecord | None:
        """The record numbered ``number``, or None."""
        if 1 <= number <= len(self.records):
            return self.records[number - 1]
        return None

    def __len__(self) -> int:
        return len(self.records)


def _latency(doc: Any) -> Latency:
    return Latency(
        mean_us=float(doc["mean_us"]),
        min_us=float(doc["min_us"]),
        max_us=float(doc["max_us"]),
        percentiles_us=tuple((str(k), float(v)) for k, v in doc.get("percentiles_us", [])),
    )


def _block(doc: Any) -> BlockLatency | None:
    if doc is None:
        return None
    pcts = tuple((str(k), float(v)) for k, v in doc.get("percentiles_us", []))
    return BlockLatency(**{**doc, "percentiles_us": pcts})


def _direction(doc: Any) -> DirectionResult | None:
    if doc is None:
        return None
    return DirectionResult(
        **{**doc, "clat": _latency(doc["clat"]), "block": _block(doc.get("block"))}
    )


def result_from_json(doc: Any) -> ProbeResult:
    """A :class:`ProbeResult` back from ``dataclasses.asdict`` JSON.

    Raises:
        KeyError, TypeError, ValueError: the document is not such a result.
    """
    if not isinstance(doc, dict):
        raise TypeError("not an object")
    return ProbeResult(
        **{
            **doc,
            "params": ProbeParams(**doc["params"]),
            "read": _direction(doc.get("read")),
            "write": _direction(doc.get("write")),
            "fsync": _latency(doc["fsync"]) if doc.get("fsync") else None,
            "disk_util": tuple(DiskUtil(**u) for u in doc.get("disk_util", [])),
            "hints": tuple(Hint(**h) for h in doc.get("hints", [])),
            "notes": tuple(str(n) for n in doc.get("notes", [])),
            "issuers": _issuers(doc.get("issuers")),
            "flush_write": _block(doc.get("flush_write")),
            "flush": _block(doc.get("flush")),
        }
    )


def _issuers(doc: Any) -> Issuers | None:
    if doc is None:
        return None
    others = tuple((str(name), int(n)) for name, n in doc.get("others", []))
    return Issuers(
        fio=int(doc["fio"]),
        journal=int(doc["journal"]),
        others=others,
        sampled=int(doc.get("sampled", 1)),  # kept before sampling: exact counts
    )


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
        block = d.block.percentile("p99") if d and d.block else None
        rows.append((f"{name} device p99 µs", block, False))
    rows.append(("fsync mean µs", r.fsync.mean_us if r.fsync else None, False))
    flush_write = r.flush_write.percentile("p99") if r.flush_write else None
    rows.append(("flush+write p99 µs", flush_write, False))
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
    fa = grouped(a)
    fb = grouped(b)
    if a is None or b is None:
        return ComparisonRow(label, fa, fb, "", None)
    diff = b - a
    pct = f" ({diff / a:+.1%})" if a else ""
    better = None if diff == 0 else (diff > 0) == higher
    return ComparisonRow(label, fa, fb, f"{grouped_signed(diff)}{pct}", better)
