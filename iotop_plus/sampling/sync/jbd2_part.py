"""The journal part of a frame: jbd2 commits per second and how long their phases took.

Traced (:mod:`~iotop_plus.sampling.sync.jbd2_program`): commits and the locked, flushing and
logging phases in µs, and the running time (jiffies: coarse). Untraced: commits from the
transaction count in ``/proc/fs/jbd2/<dev>-<ino>/info`` between frames, and the phases
``null``. A journal counts on its device's whole disk.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from iotop_plus.sampling.frame.part import FramePart, Metric, ReadContext, TraceProgram
from iotop_plus.sampling.sync.files import kdev_names, whole_disk
from iotop_plus.sampling.sync.jbd2_program import (
    PHASES,
    Jbd2Stat,
    Jbd2Traced,
    PhaseStat,
    journal_trace_program,
)
from iotop_plus.sampling.sync.program import tracepoint_groups

if TYPE_CHECKING:
    from iotop_plus.roots import Roots

TIMED = PHASES[:3]
"""The phases timed with the clock (ns)."""
INFO_MAX_BYTES = 4096


@dataclass(frozen=True)
class DeviceJournal:
    """One disk's journals over the frame, and their totals since the reader started."""

    commits: int
    """Commits over the frame."""
    interval_s: float | None
    """The frame's length (None on the first frame: no rate yet)."""
    phases: Mapping[str, PhaseStat] | None
    """``locked``, ``flushing``, ``logging`` in ns and ``running`` in ms; None untraced."""
    commits_total: int = 0
    phase_ns_total: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def commits_per_s(self) -> float | None:
        if not self.interval_s:
            return None
        return self.commits / self.interval_s


@dataclass(frozen=True)
class Jbd2Frame:
    """The journal part's value: disks with a jbd2 journal."""

    devices: Mapping[str, DeviceJournal]
    traced: bool


def kernel_hz(roots: Roots) -> int | None:
    """The kernel's ``CONFIG_HZ`` (jiffies a second) from its config, if readable."""
    texts: list[str] = []
    with (
        contextlib.suppress(OSError, EOFError, gzip.BadGzipFile),
        gzip.open(roots.proc / "config.gz", "rt", errors="replace") as fh,
    ):
        texts.append(fh.read(1 << 20))
    if roots.is_live:
        with contextlib.suppress(OSError):
            texts.append(Path(f"/boot/config-{platform.release()}").read_text(errors="replace"))
    for text in texts:
        for line in text.splitlines():
            if line.startswith("CONFIG_HZ="):
                value = line.partition("=")[2].strip()
                return int(value) if value.isdigit() and int(value) > 0 else None
    return None


def read_transactions(proc: Path) -> dict[str, int]:
    """Transactions committed so far per journal device name (``/proc/fs/jbd2``)."""
    out: dict[str, int] = {}
    base = proc / "fs" / "jbd2"
    try:
        entries = os.listdir(base)
    except OSError:
        return out
    for entry in entries:
        name, sep, _ = entry.rpartition("-")
        if not sep:
            continue
        try:
            with open(base / entry / "info", "rb") as fh:
                first = fh.read(INFO_MAX_BYTES).split(b"\n", 1)[0].split()
        except OSError:
            continue
        if len(first) >= 2 and first[1] == b"transactions" and first[0].isdigit():
            out[name] = out.get(name, 0) + int(first[0])
    return out


class Jbd2Reader:
    """Gives each frame the commits since the previous one."""

    def __init__(self, roots: Roots) -> None:
        self._roots = roots
        self._hz = kernel_hz(roots)
        self._counts: dict[str, int] | None = None
        self._commits: dict[str, int] = {}
        self._phase_ns: dict[str, dict[str, int]] = {}

    def read(self, ctx: ReadContext) -> tuple[Jbd2Frame | None, tuple[Any, ...]]:
        interval = ctx.sample.monotonic - ctx.previous.monotonic if ctx.previous else None
        counts = read_transactions(self._roots.proc)
        before, self._counts = self._counts, counts
        traced = ctx.traced if isinstance(ctx.traced, Jbd2Traced) else None
        per: dict[str, Jbd2Stat] = {}
        disks = {whole_disk(n, ctx.inventory) for n in counts}
        if traced is not None:
            names = kdev_names(ctx.sample)
            for dev, stat in traced.journals.items():
                name = names.get(dev)
                if name is not None:
                    disk = whole_disk(name, ctx.inventory)
                    per[disk] = per[disk].merged(stat) if disk in per else stat
        else:
            for name, n in counts.items():
                old = (before or {}).get(name)
                disk = whole_disk(name, ctx.inventory)
                done = n - old if old is not None and n >= old else 0
                per[disk] = per.get(disk, Jbd2Stat()).merged(Jbd2Stat(done))
            if before is None:
                interval = None
        devices: dict[str, DeviceJournal] = {}
        for disk in sorted(disks | set(per)):
            stat = per.get(disk, Jbd2Stat())
            self._commits[disk] = self._commits.get(disk, 0) + stat.commits
            totals = self._phase_ns.setdefault(disk, {})
            phases: dict[str, PhaseStat] | None = None
            if traced is not None:
                phases = {p: stat.phases.get(p, PhaseStat()) for p in TIMED}
                for p in TIMED:
                    totals[p] = totals.get(p, 0) + phases[p].total
                run = stat.phases.get("running", PhaseStat())
                if self._hz and run.count:
                    ms = 1000 / self._hz
                    phases["running"] = PhaseStat(
                        run.count, round(run.total * ms), round(run.top * ms)
                    )
            devices[disk] = DeviceJournal(
                stat.commits,
                interval,
                None if phases is None else MappingProxyType(phases),
                self._commits[disk],
                MappingProxyType(dict(totals)),
            )
        return Jbd2Frame(MappingProxyType(devices), traced is not None), ()

    def close(self) -> None:
        """Nothing to release."""


def _us(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1000.0, 1)


def journal_summary(dev: DeviceJournal) -> dict[str, Any]:
    """``disk[].journal`` of ``snapshot`` JSON."""
    rate = dev.commits_per_s
    out: dict[str, Any] = {"commits_per_s": None if rate is None else round(rate, 2)}
    for p in TIMED:
        stat = dev.phases.get(p) if dev.phases is not None else None
        out[f"{p}_us"] = (
            None
            if stat is None
            else {"avg": _us(stat.mean), "max": _us(stat.top) if stat.count else None}
        )
    run = dev.phases.get("running") if dev.phases is not None else None
    out["running_ms"] = (
        None if run is None else {"avg": round(run.mean or 0.0, 1), "max": run.top, "coarse": True}
    )
    return out


class Jbd2Part(FramePart[Jbd2Frame]):
    """jbd2 commits per second and their phases, per disk."""

    key: ClassVar[str] = "jbd2"
    letter: ClassVar[str | None] = "J"
    record_flag: ClassVar[str | None] = "sync"
    live_only: ClassVar[bool] = True

    def reader(self, roots: Roots) -> Jbd2Reader:
        return Jbd2Reader(roots)

    def trace(self, roots: Roots) -> TraceProgram | None:
        return journal_trace_program() if "jbd2" in tracepoint_groups(roots.sys) else None

    def to_json(self, value: Jbd2Frame) -> Any:
        return {
            "traced": value.traced,
            "devices": {
                name: {
                    "commits": d.commits,
                    "interval_s": d.interval_s,
                    "phases": None
                    if d.phases is None
                    else {p: [s.count, s.total, s.top] for p, s in d.phases.items()},
                    "commits_total": d.commits_total,
                    "phase_ns_total": dict(d.phase_ns_total),
                }
                for name, d in value.devices.items()
            },
        }

    def from_json(self, doc: Any) -> Jbd2Frame | None:
        if not isinstance(doc, dict) or not isinstance(doc.get("devices"), dict):
            return None
        devices: dict[str, DeviceJournal] = {}
        for name, d in doc["devices"].items():
            got = _device(d)
            if not isinstance(name, str) or got is None:
                return None
            devices[name] = got
        return Jbd2Frame(MappingProxyType(devices), doc.get("traced") is True)

    def disk_json(self, value: Jbd2Frame, device: str) -> Mapping[str, Any]:
        dev = value.devices.get(device)
        return {} if dev is None else {"journal": journal_summary(dev)}

    def metrics(self, value: Jbd2Frame) -> Iterable[Metric]:
        for name, dev in sorted(value.devices.items()):
            yield Metric(
                "iotop_plus_disk_journal_commits_total",
                "counter",
                "jbd2 journal commits on the device since the exporter started.",
                {"device": name},
                float(dev.commits_total),
            )
            for phase, ns in sorted(dev.phase_ns_total.items()):
                yield Metric(
                    "iotop_plus_disk_journal_phase_seconds_total",
                    "counter",
                    "Time jbd2 commits spent locked, flushing data and logging (traced).",
                    {"device": name, "phase": phase},
                    ns / 1e9,
                )


def _int(v: Any) -> bool:
    return type(v) is int and v >= 0


def _device(d: Any) -> DeviceJournal | None:
    if not isinstance(d, dict):
        return None
    commits, interval, phases = d.get("commits"), d.get("interval_s"), d.get("phases")
    total, by_phase = d.get("commits_total"), d.get("phase_ns_total")
    if type(commits) is not int or type(total) is not int or not isinstance(by_phase, dict):
        return None
    if commits < 0 or total < 0:
        return None
    if interval is not None and (not isinstance(interval, (int, float)) or interval < 0):
        return None
    got: dict[str, PhaseStat] | None = None
    if phases is not None:
        if not isinstance(phases, dict):
            return None
        got = {}
        for p, v in phases.items():
            if p not in PHASES or not isinstance(v, list) or len(v) != 3 or not all(map(_int, v)):
                return None
            got[p] = PhaseStat(*v)
    if not all(p in TIMED and _int(v) for p, v in by_phase.items()):
        return None
    return DeviceJournal(
        commits,
        None if interval is None else float(interval),
        None if got is None else MappingProxyType(got),
        total,
        MappingProxyType(dict(by_phase)),
    )
