"""Tuning experiments: a queue-depth sweep and an A/B comparison of one queue setting.

Both run fio through :class:`~iotop_plus.probe.runner.ProbeRunner`, one run at a time, and
report each finished step through a callback as an immutable value. Cancel one by cancelling
the task that awaits it: the fio run is killed by the runner, and an A/B puts the setting back
(through the journaled :class:`~iotop_plus.devices.tuner.Tuner`) in ``finally``.

The analysis functions are pure: they take step figures and return the reading, so they can
be checked on constructed data.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from iotop_plus.devices.journal import Journal
from iotop_plus.devices.settings import SETTINGS, SettingError, queue_device
from iotop_plus.devices.tuner import Change, Tuner, TuningError
from iotop_plus.probe.history import ProbeHistory, settings_in_force
from iotop_plus.probe.preflight import (
    ExperimentError,
    plan_first,
    refuse_equal_effective,
    refuse_leftovers,
)
from iotop_plus.probe.presets import PRESETS, Preset, ProbeParams
from iotop_plus.probe.results import ProbeResult
from iotop_plus.probe.runner import ProbeError, ProbeProgress, ProbeRequest, ProbeRunner
from iotop_plus.probe.target import ProbeTarget
from iotop_plus.roots import Roots

#: The default deepest queue of a sweep.
DEFAULT_MAX_QD = 128
#: Seconds per sweep step by default: enough for a curve, short enough to try things.
DEFAULT_STEP_RUNTIME_S = 3
#: A doubling of QD that brings less than this share of the ideal doubling of IOPS ends the
#: linear range.
SCALING_EFFICIENCY = 0.8
#: IOPS that grow by less than this share from one step to the next have reached a plateau.
PLATEAU_GAIN = 0.10
#: Mean latency that grows by more than this share in one step is rising with QD.
LATENCY_RISE = 0.25
#: The settings an A/B may compare.
AB_SETTINGS = ("read_ahead_kb", "scheduler", "nr_requests")
#: The A/B rounds by default (each round runs every value once).
DEFAULT_ROUNDS = 2


# --- queue-depth sweep -----------------------------------------------------------------------


@dataclass(frozen=True)
class SweepStep:
    """The figures of one queue depth of a sweep."""

    qd: int
    """I/Os in flight (fio iodepth, one job)."""
    iops: float
    """I/Os per second."""
    mean_lat_us: float
    """Mean completion latency."""
    p99_us: float | None
    """99th percentile completion latency, when fio gave it."""
    bw_kib_s: float
    """Bandwidth in KiB/s."""
    util_pct: float | None
    """How busy the device was (fio's ``disk_util``), when fio could tell."""


@dataclass(frozen=True)
class SweepAnalysis:
    """Where the IOPS curve bends."""

    saturation_onset_qd: int | None
    """The last QD up to which IOPS still scaled linearly (the knee); None with < 2 steps."""
    full_saturation_qd: int | None
    """The first QD at which IOPS plateau while mean latency rises; None if never seen."""
    qd_90pct: int | None
    """The smallest QD reaching 90% of the peak IOPS."""
    peak_iops: float
    """The highest IOPS of the sweep."""
    peak_qd: int | None
    """The QD of the peak."""
    efficiencies: tuple[tuple[int, float], ...]
    """(QD, IOPS gain over the ideal linear gain from the previous step), from the 2nd step."""

    def summary(self) -> list[str]:
        """The reading in plain lines."""
        lines = []
        if self.saturation_onset_qd is None:
            lines.append("saturation onset: not enough steps to tell")
        else:
            lines.append(
                f"saturation onset: IOPS scale linearly up to QD {self.saturation_onset_qd}"
                + (
                    ""
                    if any(e < SCALING_EFFICIENCY for _, e in self.efficiencies)
                    else " (still scaling at the deepest step)"
                )
            )
        if self.full_saturation_qd is None:
            lines.append("full saturation: not reached (latency did not rise on a plateau)")
        else:
            lines.append(
                f"full saturation: from QD {self.full_saturation_qd} IOPS plateau "
                "while latency rises"
            )
        if self.qd_90pct is not None:
            lines.append(
                f"90% of peak IOPS ({self.peak_iops:,.0f} at QD {self.peak_qd}) "
                f"is reached at QD {self.qd_90pct}"
            )
        return lines


@dataclass(frozen=True)
class SweepResult:
    """A finished (or partly finished) sweep."""

    target: str
    """Where it ran, for people."""
    device: str | None
    """The device measured, when known."""
    preset: str
    """The preset whose pattern was run at each QD."""
    bs: str
    """Block size."""
    step_runtime_s: int
    """Seconds per step."""
    steps: tuple[SweepStep, ...]
    """The steps, QD increasing."""
    analysis: SweepAnalysis
    """Where the curve bends."""
    complete: bool = True
    """False when the sweep was stopped before its last step."""


def sweep_depths(max_qd: int) -> tuple[int, ...]:
    """1, 2, 4 ... up to ``max_qd`` (``max_qd`` itself last when not a power of two)."""
    if max_qd < 1:
        raise ValueError(f"max QD must be at least 1: {max_qd}")
    depths = [1]
    while depths[-1] * 2 <= max_qd:
        depths.append(depths[-1] * 2)
    if depths[-1] != max_qd:
        depths.append(max_qd)
    return tuple(depths)


def analyze_sweep(steps: Sequence[SweepStep]) -> SweepAnalysis:
    """Find the knee, the plateau and the 90%-of-peak QD of a sweep (QD increasing).

    Efficiency of a step is ``IOPS(qd) / (IOPS(prev) * qd / prev_qd)``: 1 when doubling the
    queue doubles the IOPS. The saturation onset is the last QD before the efficiency first
    falls below :data:`SCALING_EFFICIENCY`. Full saturation is the first QD whose IOPS grew by
    less than :data:`PLATEAU_GAIN` while mean latency grew by more than :data:`LATENCY_RISE`.
    """
    ordered = sorted(steps, key=lambda s: s.qd)
    if not ordered:
        return SweepAnalysis(None, None, None, 0.0, None, ())
    efficiencies: list[tuple[int, float]] = []
    onset: int | None = None
    full: int | None = None
    for prev, cur in itertools.pairwise(ordered):
        ideal = prev.iops * cur.qd / prev.qd
        eff = cur.iops / ideal if ideal > 0 else 0.0
        efficiencies.append((cur.qd, eff))
        if onset is None and eff < SCALING_EFFICIENCY:
            onset = prev.qd
        gain = (cur.iops - prev.iops) / prev.iops if prev.iops > 0 else 0.0
        lat_rise = (
            (cur.mean_lat_us - prev.mean_lat_us) / prev.mean_lat_us if prev.mean_lat_us > 0 else 0
        )
        if full is None and gain < PLATEAU_GAIN and lat_rise > LATENCY_RISE:
            full = cur.qd
    if onset is None and len(ordered) >= 2:
        onset = ordered[-1].qd
    peak = max(ordered, key=lambda s: s.iops)
    qd90 = next((s.qd for s in ordered if s.iops >= 0.9 * peak.iops), None)
    return SweepAnalysis(onset, full, qd90, peak.iops, peak.qd, tuple(efficiencies))


def step_from_result(qd: int, result: ProbeResult, device: str | None) -> SweepStep:
    """The sweep figures of one probe result at queue depth ``qd``."""
    p99 = result.read.clat.percentile("p99") if result.read else None
    return SweepStep(
        qd=qd,
        iops=result.iops,
        mean_lat_us=result.mean_clat_us,
        p99_us=p99,
        bw_kib_s=float(result.bw_kib_s),
        util_pct=_util(result, device),
    )


def _util(result: ProbeResult, device: str | None) -> float | None:
    chosen = [u for u in result.disk_util if u.name == device] or list(result.disk_util[:1])
    return chosen[0].util_pct if chosen else None


def sweep_table(steps: Sequence[SweepStep]) -> str:
    """The seeds' table: QD, IOPS, avg lat, p99, bandwidth, device util."""
    lines = [f"{'QD':>5} {'IOPS':>11} {'avg lat µs':>11} {'p99 µs':>10} {'MiB/s':>9} {'util %':>7}"]
    for s in steps:
        p99 = f"{s.p99_us:,.0f}" if s.p99_us is not None else "-"
        util = f"{s.util_pct:.1f}" if s.util_pct is not None else "-"
        lines.append(
            f"{s.qd:>5} {s.iops:>11,.0f} {s.mean_lat_us:>11,.1f} {p99:>10} "
            f"{s.bw_kib_s / 1024:>9,.1f} {util:>7}"
        )
    return "\n".join(lines) + "\n"


async def run_sweep(
    runner: ProbeRunner,
    target: str,
    *,
    max_qd: int = DEFAULT_MAX_QD,
    step_runtime_s: int = DEFAULT_STEP_RUNTIME_S,
    preset: Preset | None = None,
    params: ProbeParams | None = None,
    on_step: Callable[[SweepStep], object] | None = None,
    on_progress: Callable[[int, ProbeProgress], object] | None = None,
    history: ProbeHistory | None = None,
    journal: Journal | None = None,
) -> SweepResult:
    """Run the random-read pattern at QD 1, 2, 4 ... ``max_qd``, one job, read-only on devices.

    Args:
        runner: Runs fio.
        target: A block device path (read-only) or a directory (a probe file is made).
        max_qd: The deepest queue.
        step_runtime_s: Seconds per step.
        preset: The read pattern (default ``randread``); a write preset is refused.
        params: Its parameters (default: the preset's); iodepth and numjobs are set per step.
        on_step: Called with each finished step.
        on_progress: Called with (QD, fio's live status) every second.
        history: Where each step's result is recorded with the settings in force.
        journal: The settings journal: a leftover of a dead run on the target's device
            refuses the sweep (its figures would not be under the original settings).

    Raises:
        ExperimentError: a bad argument, a leftover or a failed fio run, in one line.
        asyncio.CancelledError: when cancelled (fio is killed, the probe file removed).
    """
    preset = preset or PRESETS["randread"]
    if preset.writes:
        raise ExperimentError(f"a sweep reads only: preset {preset.name} writes")
    try:
        depths = sweep_depths(max_qd)
    except ValueError as exc:
        raise ExperimentError(str(exc)) from None
    base = replace(params or preset.params, numjobs=1, runtime_s=step_runtime_s, direct=True)
    planned = plan_first(runner, target, preset, base)
    refuse_leftovers(journal, runner.roots, planned.device)
    steps: list[SweepStep] = []
    label, device = target, None
    for qd in depths:
        request = ProbeRequest(preset, replace(base, iodepth=qd), target)

        def progress(p: ProbeProgress, qd: int = qd) -> None:
            if on_progress is not None:
                on_progress(qd, p)

        try:
            outcome = await runner.run(request, on_progress=progress)
        except ProbeError as exc:
            raise ExperimentError(f"QD {qd}: {exc}") from None
        label, device = outcome.target.label, outcome.target.device
        if history is not None:
            history.add(outcome.result, settings_in_force(runner.roots, device))
        step = step_from_result(qd, outcome.result, device)
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return SweepResult(
        label, device, preset.name, base.bs, step_runtime_s, tuple(steps), analyze_sweep(steps)
    )


# --- A/B of a setting ------------------------------------------------------------------------


@dataclass(frozen=True)
class AbRun:
    """One probe run of an A/B under one value of the setting."""

    round: int
    """Round number, from 1."""
    value: str
    """The value asked for."""
    effective: str
    """The value the kernel kept."""
    iops: float
    """I/Os per second."""
    bw_kib_s: float
    """Bandwidth in KiB/s."""
    mean_lat_us: float
    """Mean completion latency."""
    p99_us: float | None
    """99th percentile completion latency (reads, else writes)."""
    fio_ios: int
    """I/Os fio issued."""
    device_ios: int | None
    """I/Os the device served (fio's ``disk_util``), when fio could tell."""


@dataclass(frozen=True)
class Spread:
    """The median and range of one figure over the runs of one value."""

    median: float
    """Median over the runs."""
    low: float
    """Smallest run."""
    high: float
    """Largest run."""

    @staticmethod
    def of(values: Sequence[float]) -> Spread:
        """The spread of ``values`` (at least one)."""
        return Spread(statistics.median(values), min(values), max(values))

    def overlaps(self, other: Spread) -> bool:
        """Whether the two ranges share any value."""
        return self.low <= other.high and other.low <= self.high


@dataclass(frozen=True)
class AbValueSummary:
    """The runs of one value, summarised."""

    value: str
    """The value asked for."""
    runs: int
    """How many runs it had."""
    metric: Spread
    """The headline figure (see :attr:`AbResult.metric`)."""
    mean_lat_us: Spread
    """Mean completion latency."""
    p99_us: Spread | None
    """p99 completion latency, when every run had it."""
    fio_ios: float
    """Median I/Os fio issued per run."""
    device_ios: float | None
    """Median I/Os the device served per run, when known."""


@dataclass(frozen=True)
class AbComparison:
    """One value against the first (the baseline)."""

    value: str
    """The value compared."""
    baseline: str
    """The first value."""
    change_pct: float
    """Median headline figure against the baseline's, in percent (+ is more)."""
    verdict: str
    """The plain reading, e.g. ``no difference beyond noise``."""


@dataclass(frozen=True)
class AbResult:
    """A finished (or stopped) A/B."""

    device: str
    """The device whose setting was changed."""
    setting: str
    """The setting's sysfs name."""
    values: tuple[str, ...]
    """The values compared, baseline first."""
    original: str
    """The setting's value before the experiment (restored at the end)."""
    restored: bool
    """Whether the original value was read back after the experiment."""
    preset: str
    """The preset run."""
    target: str
    """Where fio ran, for people."""
    metric: str
    """The headline figure: ``IOPS`` or ``MiB/s``."""
    runs: tuple[AbRun, ...]
    """Every run, in order."""
    summaries: tuple[AbValueSummary, ...]
    """Per value, baseline first."""
    comparisons: tuple[AbComparison, ...]
    """Every value after the first against the first."""
    notes: tuple[str, ...] = ()
    """Facts about how it ran (pattern changed for read-ahead, cache dropped...)."""
    complete: bool = True
    """False when stopped before the last run."""


def ab_order(values: Sequence[str], rounds: int) -> tuple[tuple[int, str], ...]:
    """(round, value) in run order: A B A B ..., each round every value once."""
    return tuple((r + 1, v) for r in range(rounds) for v in values)


def headline_metric(preset: Preset) -> str:
    """``MiB/s`` for sequential patterns, ``IOPS`` for random ones."""
    return "MiB/s" if preset.rw in ("read", "write", "rw") else "IOPS"


def _metric_of(run: AbRun, metric: str) -> float:
    return run.bw_kib_s / 1024 if metric == "MiB/s" else run.iops


def analyze_ab(
    values: Sequence[str], runs: Sequence[AbRun], metric: str
) -> tuple[tuple[AbValueSummary, ...], tuple[AbComparison, ...]]:
    """Per-value medians and spreads, and each value against the first with a verdict.

    The verdict is ``no difference beyond noise`` when the ranges of the headline figure
    overlap (with one run each, when they differ by under 5%).
    """
    summaries: list[AbValueSummary] = []
    for value in values:
        mine = [r for r in runs if r.value == value]
        if not mine:
            continue
        p99s = [r.p99_us for r in mine if r.p99_us is not None]
        dev = [r.device_ios for r in mine if r.device_ios is not None]
        summaries.append(
            AbValueSummary(
                value=value,
                runs=len(mine),
                metric=Spread.of([_metric_of(r, metric) for r in mine]),
                mean_lat_us=Spread.of([r.mean_lat_us for r in mine]),
                p99_us=Spread.of(p99s) if len(p99s) == len(mine) else None,
                fio_ios=statistics.median([r.fio_ios for r in mine]),
                device_ios=statistics.median(dev) if dev else None,
            )
        )
    comparisons: list[AbComparison] = []
    if summaries:
        base = summaries[0]
        for other in summaries[1:]:
            change = (
                (other.metric.median - base.metric.median) / base.metric.median * 100
                if base.metric.median
                else 0.0
            )
            single = base.runs == 1 or other.runs == 1
            noise = abs(change) < 5 if single else base.metric.overlaps(other.metric)
            if noise:
                verdict = "no difference beyond noise"
            else:
                word = "more" if change > 0 else "less"
                verdict = (
                    f"{other.value} gives {abs(change):.0f}% {word} {metric} than {base.value}"
                )
                if single:
                    verdict += " (one run each: run more rounds to know the noise)"
            comparisons.append(AbComparison(other.value, base.value, change, verdict))
    return tuple(summaries), tuple(comparisons)


def ab_table(result: AbResult) -> str:
    """Per-value medians and ranges, device I/Os against fio's, then the verdicts."""
    m = result.metric
    lines = [
        f"{'value':>14} {'runs':>4} {m + ' median':>14} {'range':>21} {'mean lat µs':>12} "
        f"{'p99 µs':>10} {'fio I/Os':>10} {'device I/Os':>12}"
    ]
    for s in result.summaries:
        rng = f"{s.metric.low:,.1f}..{s.metric.high:,.1f}"
        p99 = f"{s.p99_us.median:,.0f}" if s.p99_us else "-"
        dev = f"{s.device_ios:,.0f}" if s.device_ios is not None else "-"
        lines.append(
            f"{s.value:>14} {s.runs:>4} {s.metric.median:>14,.1f} {rng:>21} "
            f"{s.mean_lat_us.median:>12,.1f} {p99:>10} {s.fio_ios:>10,.0f} {dev:>12}"
        )
    for c in result.comparisons:
        lines.append(f"{c.value} vs {c.baseline}: {c.change_pct:+.1f}% {m}: {c.verdict}")
    restored = "restored" if result.restored else "NOT restored"
    lines.append(f"{result.device} {result.setting}: original {result.original} {restored}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


def drop_cache(path: Path) -> None:
    """Drop the clean page cache of ``path`` (a device or file): POSIX_FADV_DONTNEED.

    Only cached copies are dropped: nothing is written, and data on the device is untouched.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _ab_pattern(setting: str, preset: Preset, params: ProbeParams) -> tuple[Preset, ProbeParams]:
    """Read-ahead only acts on buffered sequential reads: switch the pattern to those."""
    if setting != "read_ahead_kb":
        return preset, params
    if preset.rw != "read":
        preset = PRESETS["seqscan"]
        params = replace(preset.params, runtime_s=params.runtime_s, size_mb=params.size_mb)
    return preset, replace(params, direct=False)


async def run_ab(
    tuner: Tuner,
    runner: ProbeRunner,
    device: str,
    setting: str,
    values: Sequence[str],
    preset: Preset,
    target: str,
    *,
    params: ProbeParams | None = None,
    rounds: int = DEFAULT_ROUNDS,
    on_run: Callable[[AbRun], object] | None = None,
    on_progress: Callable[[int, str, ProbeProgress], object] | None = None,
    history: ProbeHistory | None = None,
) -> AbResult:
    """Apply each value in turn through ``tuner``, run the probe, and compare.

    Values alternate (A B A B ...) for ``rounds`` rounds to cancel drift. Each value is
    applied before its run and undone right after, so the original value is in force between
    runs, at the end, on cancel and on error. For ``read_ahead_kb`` the pattern is a buffered
    sequential read, and the page cache of the target is dropped before each run.

    Raises:
        ExperimentError: a refused value or a failed run (after the original is restored).
        asyncio.CancelledError: when cancelled (after the original is restored).
    """
    if setting not in AB_SETTINGS:
        raise ExperimentError(f"an A/B compares one of {', '.join(AB_SETTINGS)}, not {setting!r}")
    if len(values) < 2:
        raise ExperimentError("an A/B needs at least two values")
    if rounds < 1:
        raise ExperimentError(f"rounds must be at least 1: {rounds}")
    try:
        checked = [tuner.validate(device, setting, v) for v in values]
        original = tuner.read_one(device, setting).value
    except SettingError as exc:
        raise ExperimentError(str(exc)) from None
    if original is None:
        raise ExperimentError(f"{device} {setting}: cannot be read")
    if len(set(checked)) < len(checked):
        raise ExperimentError(f"the values of {setting} must differ: {', '.join(values)}")
    refuse_equal_effective(tuner, device, setting, checked)
    run_preset, run_params = _ab_pattern(setting, preset, params or preset.params)
    # The target and fio first, the leftovers next: nothing changes before all three pass.
    plan_first(runner, target, run_preset, run_params)
    refuse_leftovers(tuner.journal, tuner.roots, device)
    if tuner.change_refused:
        raise ExperimentError(f"{device} {setting}: {tuner.change_refused}")
    notes: list[str] = []
    if run_preset is not preset:
        notes.append(
            f"read-ahead acts on buffered sequential reads: ran {run_preset.name} "
            f"({run_preset.rw}) instead of {preset.name}"
        )
    if setting == "read_ahead_kb":
        notes.append("buffered (direct=0); the page cache was dropped before each run")
    metric = headline_metric(run_preset)
    runs: list[AbRun] = []
    label = target
    request = ProbeRequest(run_preset, run_params, target)
    complete = False
    change: Change | None = None
    try:
        for round_no, value in ab_order(list(checked), rounds):
            try:
                change = tuner.apply(device, setting, value)
            except SettingError as exc:
                raise ExperimentError(f"round {round_no}: {exc}") from None

            def started(t: ProbeTarget) -> None:
                if setting == "read_ahead_kb":
                    _drop_target_cache(t)

            def progress(p: ProbeProgress, r: int = round_no, v: str = value) -> None:
                if on_progress is not None:
                    on_progress(r, v, p)

            try:
                outcome = await runner.run(request, on_progress=progress, on_start=started)
            except ProbeError as exc:
                raise ExperimentError(f"{setting}={value} (round {round_no}): {exc}") from None
            label = outcome.target.label
            if not runs:  # the first run: say if the setting cannot matter here
                note = _elsewhere_note(runner.roots, device, outcome.target.device)
                if note:
                    notes.append(note)
            if history is not None:
                history.add(outcome.result, settings_in_force(runner.roots, device))
            run = _ab_run(round_no, value, change.effective, outcome.result, outcome.target)
            _undo(tuner, change)
            change = None
            runs.append(run)
            if on_run is not None:
                on_run(run)
        complete = True
    finally:
        if change is not None:
            _undo(tuner, change)
    now = tuner.read_one(device, setting).value
    summaries, comparisons = analyze_ab(list(checked), runs, metric)
    return AbResult(
        device=device,
        setting=setting,
        values=tuple(checked),
        original=original,
        restored=now == original,
        preset=run_preset.name,
        target=label,
        metric=metric,
        runs=tuple(runs),
        summaries=summaries,
        comparisons=comparisons,
        notes=tuple(notes),
        complete=complete,
    )


def _undo(tuner: Tuner, change: Change) -> None:
    """Put back what ``change`` replaced, through the journal.

    ``Tuner.undo`` undoes the newest change. If another change came after ours, the old value
    is written as a new change instead; if ours was already reverted (the app's revert-all on
    quit), there is nothing left to do.
    """
    active = tuner.active
    if active and active[-1].sequence == change.sequence:
        tuner.undo()
        return
    if all(c.sequence != change.sequence for c in active):
        return
    try:
        tuner.apply(change.device, change.setting, change.old)
    except SettingError as exc:
        raise TuningError(f"cannot restore {exc}") from None


def _elsewhere_note(roots: Roots, device: str, measured: str | None) -> str | None:
    """A note when the probe measured another device than the one whose setting changes."""
    if measured is None:
        return f"cannot tell which device holds the target: is it on {device}?"
    if queue_device(roots, measured) == queue_device(roots, device):
        return None
    # A partition, dm or md device on top of ``device`` still goes through its queue.
    return (
        f"the target is on {measured}, not {device}: {device}'s setting only matters if "
        f"{measured} sits on it"
    )


def _drop_target_cache(target: ProbeTarget) -> None:
    # A device target: drop its own page cache. A probe file is new for every run, and fio
    # drops its cache itself before reading (invalidate=1, its default).
    if target.kind == "device" and target.device_path is not None:
        with contextlib.suppress(OSError):
            drop_cache(target.device_path)


def _ab_run(
    round_no: int, value: str, effective: str, result: ProbeResult, target: ProbeTarget
) -> AbRun:
    util = [u for u in result.disk_util if u.name == target.device] or list(result.disk_util[:1])
    direction = result.read or result.write
    return AbRun(
        round=round_no,
        value=value,
        effective=effective,
        iops=result.iops,
        bw_kib_s=float(result.bw_kib_s),
        mean_lat_us=result.mean_clat_us,
        p99_us=direction.clat.percentile("p99") if direction else None,
        fio_ios=sum(d.total_ios for d in result.directions),
        device_ios=(util[0].read_ios + util[0].write_ios) if util else None,
    )


def parse_ab_spec(text: str) -> tuple[str, tuple[str, ...]]:
    """Split ``read_ahead_kb=0,1024`` into the setting and its values.

    Raises:
        ValueError: quoting the text when it is not ``SETTING=V1,V2[,...]`` of a known setting.
    """
    setting, sep, rest = text.partition("=")
    setting = setting.strip()
    values = tuple(v.strip() for v in rest.split(",") if v.strip())
    if not sep or not setting:
        raise ValueError(f"expected SETTING=V1,V2[,...], got {text!r}")
    if setting not in AB_SETTINGS:
        known = ", ".join(AB_SETTINGS)
        hint = " (a queue setting, but not one an A/B compares)" if setting in SETTINGS else ""
        raise ValueError(f"cannot A/B {setting!r}{hint}: use one of {known}")
    if len(values) < 2:
        raise ValueError(f"give at least two values for {setting}: {text!r}")
    return setting, values


__all__ = [
    "AB_SETTINGS",
    "AbComparison",
    "AbResult",
    "AbRun",
    "AbValueSummary",
    "ExperimentError",
    "Spread",
    "SweepAnalysis",
    "SweepResult",
    "SweepStep",
    "ab_order",
    "ab_table",
    "analyze_ab",
    "analyze_sweep",
    "drop_cache",
    "headline_metric",
    "parse_ab_spec",
    "refuse_leftovers",
    "run_ab",
    "run_sweep",
    "step_from_result",
    "sweep_depths",
    "sweep_table",
]
