"""The durability probe, run: every sync method of :mod:`iotop_plus.probe.durability_plan`
one after another through :class:`~iotop_plus.probe.runner.ProbeRunner`, as a sweep runs its
steps.

Each run gets its own private probe directory and file (the write-probe safety rules of
:mod:`iotop_plus.probe.target`), laid out by the probe and removed when the run ends, is
cancelled or fails. The device's flush counters (``stat`` fields 15 and 16) are read around
each run and the whole probe; its ``queue/write_cache``, ``queue/fua`` and
``queue/rotational`` once.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from iotop_plus.devices.settings import queue_device
from iotop_plus.probe.durability_plan import (
    DEFAULT_RUNTIME_S,
    DeviceFacts,
    DurabilityResult,
    Method,
    MethodResult,
    callout,
    device_kind,
    method_result,
    plan,
    suggest,
)
from iotop_plus.probe.history import ProbeHistory, settings_in_force
from iotop_plus.probe.preflight import ExperimentError, plan_first
from iotop_plus.probe.results import BlockLatency
from iotop_plus.probe.run_types import DirectIORefused, ProbeError, ProbeProgress, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import (
    FLUSH_MS,
    FLUSHES,
    DiskCounters,
    counter_deltas,
    parse_sys_stat,
)
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded

PLAN = "durability"
"""The ``plan`` of its ``probes.jsonl`` lines."""


async def run_durability(
    runner: ProbeRunner,
    target: str,
    *,
    runtime_s: int = DEFAULT_RUNTIME_S,
    on_method: Callable[[MethodResult], object] | None = None,
    on_progress: Callable[[Method, ProbeProgress], object] | None = None,
    history: ProbeHistory | None = None,
    done: list[MethodResult] | None = None,
) -> DurabilityResult:
    """Run every method on a probe file in the directory ``target``.

    Args:
        runner: Runs fio (with ``trace``, the flush p50 comes from the block tracer).
        target: A directory; a block device is refused.
        runtime_s: Seconds per method.
        on_method: Called with each finished (or refused) method.
        on_progress: Called with (method, fio's live status) every second.
        history: Where each run's result is recorded, tagged ``plan: durability``.
        done: Filled with each method's result as it finishes (what a cancelled probe did).

    Raises:
        ExperimentError: a device target, a refused target or a failed run, in one line.
        asyncio.CancelledError: when cancelled (fio is killed, the probe file removed).
    """
    _refuse_device(target)
    methods = plan(runtime_s)
    first = methods[0]
    planned = plan_first(runner, target, first.preset, first.preset.params)
    facts = device_facts(runner.roots, planned.device)
    results: list[MethodResult] = done if done is not None else []
    flush_p50: list[BlockLatency] = []
    label = planned.label
    start = flush_counters(runner.roots, facts.device)
    with runner.tracing():
        for method in methods:

            def progress(p: ProbeProgress, m: Method = method) -> None:
                if on_progress is not None:
                    on_progress(m, p)

            request = ProbeRequest(
                method.preset, method.preset.params, target, layout=method.layout
            )
            before = flush_counters(runner.roots, facts.device)
            try:
                outcome = await runner.run(request, on_progress=progress)
            except DirectIORefused as exc:
                found = MethodResult(method.name, method.writes_per_op, reason=str(exc))
            except ProbeError as exc:
                raise ExperimentError(f"{method.label}: {exc}") from None
            else:
                label = outcome.target.label
                flushes = _flushes(before, flush_counters(runner.roots, facts.device))
                found = method_result(method, outcome.result, flushes)
                if outcome.result.flush is not None:
                    flush_p50.append(outcome.result.flush)
                if history is not None:
                    history.add(
                        outcome.result,
                        settings_in_force(runner.roots, facts.device),
                        {
                            "plan": PLAN,
                            "method": method.name,
                            "writes_per_op": method.writes_per_op,
                        },
                    )
            results.append(found)
            if on_method is not None:
                on_method(found)
    return finish(label, facts, runtime_s, results, start, runner, flush_p50)


def finish(
    label: str,
    facts: DeviceFacts,
    runtime_s: int,
    results: list[MethodResult],
    start: DiskCounters | None,
    runner: ProbeRunner,
    traced_flushes: list[BlockLatency],
    *,
    complete: bool = True,
) -> DurabilityResult:
    """The result of the methods run so far, with the flush mean since ``start``."""
    mean = flush_mean_us(start, flush_counters(runner.roots, facts.device))
    note = callout(facts, mean)
    return DurabilityResult(
        target=label,
        device=facts.device,
        runtime_s=runtime_s,
        methods=tuple(results),
        write_cache=facts.write_cache,
        fua=facts.fua,
        flush_mean_us=mean,
        flush_p50_us=_traced_p50(traced_flushes) if runner.trace else None,
        callout=note,
        suggestion=suggest(results, facts, note),
        complete=complete,
    )


def _refuse_device(target: str) -> None:
    try:
        st = os.stat(Path(target.strip()).expanduser())
    except OSError:
        return  # the target check says what is wrong with it
    if stat.S_ISBLK(st.st_mode):
        raise ExperimentError(
            f"{target} is a block device: a durability probe writes, so give a directory on "
            "the device's filesystem"
        )


def device_facts(roots: Roots, device: str | None) -> DeviceFacts:
    """The cache settings of the device under the target, read once."""
    if device is None:
        return DeviceFacts(None, None, None, None, None, None)
    qdev = queue_device(roots, device)
    queue = roots.sys_block / qdev / "queue"

    def read(name: str) -> str | None:
        try:
            return (queue / name).read_text().strip()
        except OSError:
            return None

    fua, rotational = read("fua"), read("rotational")
    try:
        resolved = os.path.realpath(roots.sys_class_block / qdev)
    except OSError:
        resolved = ""
    return DeviceFacts(
        device,
        qdev,
        read("write_cache"),
        None if fua is None else fua == "1",
        None if rotational is None else rotational == "1",
        device_kind(qdev, resolved),
    )


def flush_counters(roots: Roots, device: str | None) -> DiskCounters | None:
    """The device's ``stat`` counters now, or None."""
    if device is None:
        return None
    path = roots.sys_class_block / device / "stat"
    try:
        return parse_sys_stat(read_bounded(path, MAX_ATTRIBUTE_BYTES), device)
    except (OSError, ValueError):
        return None


def _flushes(before: DiskCounters | None, after: DiskCounters | None) -> int | None:
    if before is None or after is None:
        return None
    d = counter_deltas(before, after)
    return d[FLUSHES] if d is not None and len(d) > FLUSH_MS else None


def flush_mean_us(before: DiskCounters | None, after: DiskCounters | None) -> float | None:
    """Mean device time of the flushes completed between two readings (diskstats keeps
    their total time in ms), or None without flushes or flush fields."""
    if before is None or after is None:
        return None
    d = counter_deltas(before, after)
    if d is None or len(d) <= FLUSH_MS or not d[FLUSHES]:
        return None
    return round(d[FLUSH_MS] * 1000.0 / d[FLUSHES], 1)


def _traced_p50(flushes: list[BlockLatency]) -> float | None:
    """The median of the runs' flush medians, weighted by their counts."""
    pairs = sorted((p50, b.count) for b in flushes if (p50 := b.percentile("p50")) is not None)
    total = sum(n for _, n in pairs)
    seen = 0
    for p50, n in pairs:
        seen += n
        if seen * 2 >= total:
            return p50
    return None


__all__ = [
    "PLAN",
    "device_facts",
    "finish",
    "flush_mean_us",
    "run_durability",
]
