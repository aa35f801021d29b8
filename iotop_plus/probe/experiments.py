"""Tuning experiments, run: a queue-depth sweep and an A/B comparison of one queue setting.

Both run fio through :class:`~iotop_plus.probe.runner.ProbeRunner`, one run at a time, and
report each finished step through a callback as an immutable value. Cancel one by cancelling
the task that awaits it: the fio run is killed by the runner, and an A/B puts the setting back
(through the journaled :class:`~iotop_plus.devices.tuner.Tuner`) in ``finally``.

What they run and how their figures are read is pure, in
:mod:`iotop_plus.probe.experiment_plans`; the checks before a start are in
:mod:`iotop_plus.probe.preflight`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from iotop_plus.devices.changes import Change
from iotop_plus.devices.conflicts import REFUSE, TuningError
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.settings import SettingError, queue_device
from iotop_plus.devices.tuner import Tuner
from iotop_plus.probe.experiment_plans import (
    AB_SETTINGS,
    DEFAULT_MAX_QD,
    DEFAULT_ROUNDS,
    DEFAULT_STEP_RUNTIME_S,
    AbResult,
    AbRun,
    SweepResult,
    SweepStep,
    ab_order,
    ab_pattern,
    ab_run_from_result,
    analyze_ab,
    analyze_sweep,
    headline_metric,
    step_from_result,
    sweep_depths,
)
from iotop_plus.probe.history import ProbeHistory, settings_in_force
from iotop_plus.probe.preflight import (
    ExperimentError,
    plan_first,
    refuse_equal_effective,
    refuse_leftovers,
)
from iotop_plus.probe.presets import PRESETS, Preset, ProbeParams
from iotop_plus.probe.results import other_io_note
from iotop_plus.probe.run_types import ProbeError, ProbeProgress, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import ProbeTarget
from iotop_plus.roots import Roots


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
    with runner.tracing():  # one tracer for every step
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


def drop_cache(path: Path) -> None:
    """Drop the clean page cache of ``path`` (a device or file): POSIX_FADV_DONTNEED.

    Only cached copies are dropped: nothing is written, and data on the device is untouched.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


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
    checked, original = _checked_values(tuner, device, setting, values, rounds)
    refuse_equal_effective(tuner, device, setting, checked)
    run_preset, run_params = ab_pattern(setting, preset, params or preset.params)
    # The target and fio first, the leftovers next: nothing changes before all three pass.
    plan_first(runner, target, run_preset, run_params)
    refuse_leftovers(tuner.journal, tuner.roots, device)
    if tuner.change_refused:
        raise ExperimentError(f"{device} {setting}: {tuner.change_refused}")
    notes = _pattern_notes(setting, preset, run_preset)
    metric = headline_metric(run_preset)
    runs: list[AbRun] = []
    label = target
    request = ProbeRequest(run_preset, run_params, target)
    complete = False
    change: Change | None = None
    with runner.tracing():  # one tracer for every run
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
                run = ab_run_from_result(
                    round_no, value, change.effective, outcome.result, outcome.target.device
                )
                busy = other_io_note(
                    f"round {round_no} ({setting}={value})",
                    run.fio_ios,
                    run.device_ios,
                    direct=run_params.direct,
                    fsync=bool(run_preset.fsync),
                    issuers=run.issuers,
                )
                if busy:
                    notes.append(busy)
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


def _checked_values(
    tuner: Tuner, device: str, setting: str, values: Sequence[str], rounds: int
) -> tuple[list[str], str]:
    """The A/B's values as the tuner would write them, and the value in force now.

    Raises:
        ExperimentError: not an A/B setting, fewer than two values or one round, a refused
            or repeated value, or a setting that cannot be read.
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
    return checked, original


def _pattern_notes(setting: str, preset: Preset, run_preset: Preset) -> list[str]:
    """What the A/B says about the pattern it ran (read-ahead runs buffered reads)."""
    notes: list[str] = []
    if run_preset is not preset:
        notes.append(
            f"read-ahead acts on buffered sequential reads: ran {run_preset.name} "
            f"({run_preset.rw}) instead of {preset.name}"
        )
    if setting == "read_ahead_kb":
        notes.append("buffered (direct=0); the page cache was dropped before each run")
    return notes


def _undo(tuner: Tuner, change: Change) -> None:
    """Put back what ``change`` replaced, through the journal.

    ``Tuner.undo`` undoes the newest change. If another change came after ours, the old value
    is written as a new change instead; if ours was already reverted (the app's revert-all on
    quit), there is nothing left to do. Either way only while the setting still holds what
    ours left: otherwise someone changed it since, and it is left (``ConflictError``).
    """
    active = tuner.active
    if active and active[-1].sequence == change.sequence:
        tuner.undo()
        return
    if all(c.sequence != change.sequence for c in active):
        return
    tuner.settle(tuner.conflict(change), REFUSE)
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


__all__ = [
    "drop_cache",
    "run_ab",
    "run_sweep",
]
