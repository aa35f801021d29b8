"""The recorded top processes of a sample as a :class:`ProcessFrame` for replay.

A recording keeps, per sample, the top N processes by disk I/O: pid, comm, cgroup, the
cumulative ``read_bytes`` and disk ``write_bytes`` of ``/proc/PID/io``, the block I/O delay in
clock ticks, and the rates the recorder saw. Replay rebuilds the Processes view from them:
rates come from two consecutive recorded samples of the same pid (so ``--interval`` and
scrubbing give the figures of the pair on screen); a pid that was not in the top N of the
sample before shows the rates the recorder saw. Since version 4 the command line of each
pid is in its chunk (:mod:`iotop_plus.record.recorded_who`); older files (and pids whose line
was not read) show the comm. What was not recorded (user, state, rchar/wchar) is left unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.sampling.frame.model import ProcessFrame
from iotop_plus.sampling.processes.delayacct import DelayAcct
from iotop_plus.sampling.processes.pid_files import USER_HZ, IoCounters
from iotop_plus.sampling.processes.rates import ProcessSample, TaskCounters, TaskKey, TaskRates


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _task(doc: Mapping[str, Any], cmdlines: Mapping[int, str]) -> TaskCounters | None:
    pid = _int(doc.get("pid"))
    if pid is None or pid <= 0:
        return None
    comm = str(doc.get("comm") or "?")[:64]
    cmdline = cmdlines.get(pid) or comm
    read, write = _int(doc.get("read_bytes")), _int(doc.get("write_bytes"))
    io = None
    if read is not None and write is not None:
        io = IoCounters(0, 0, 0, 0, read, write, 0)
    ticks = _int(doc.get("delay_ticks"))
    return TaskCounters(
        pid=pid,
        tid=pid,
        starttime=0,
        comm=comm,
        cmdline=cmdline,
        uid=None,
        user="?",
        state="?",
        num_threads=1,
        io=io,
        thread_ticks=((pid, ticks),) if ticks is not None else None,
    )


def _by_pid(
    docs: Sequence[Any] | None, cmdlines: Mapping[int, str]
) -> dict[int, tuple[TaskCounters, Mapping[str, Any]]]:
    out: dict[int, tuple[TaskCounters, Mapping[str, Any]]] = {}
    for doc in docs or ():
        if isinstance(doc, Mapping):
            task = _task(doc, cmdlines)
            if task is not None:
                out[task.pid] = (task, doc)
    return out


def _rate(now: int | None, before: int | None, dt: float) -> float | None:
    if now is None or before is None or now < before:
        return None
    return (now - before) / dt


def process_frame(
    now: RecordedSample,
    before: RecordedSample | None,
    cmdlines: Mapping[int, str] | None = None,
) -> ProcessFrame | None:
    """The Processes view of ``now`` (rates since ``before``, a sample of the same file);
    ``cmdlines``: the recorded command line per pid (else the comm is shown)."""
    if now.processes is None:
        return None
    sample = now.sample
    lines = cmdlines or {}
    tasks = _by_pid(now.processes, lines)
    prev = _by_pid(before.processes if before is not None else None, lines)
    dt = sample.monotonic - before.sample.monotonic if before is not None else 0.0
    rates: dict[TaskKey, TaskRates | None] = {}
    cgroups: dict[TaskKey, str] = {}
    for pid, (task, doc) in tasks.items():
        old = prev.get(pid)
        read_bps = write_bps = wait = None
        if old is not None and dt > 0 and old[0].comm == task.comm:
            a, b = task.io, old[0].io
            if a is not None and b is not None:
                read_bps = _rate(a.read_bytes, b.read_bytes, dt)
                write_bps = _rate(a.disk_write_bytes, b.disk_write_bytes, dt)
            ticks = _rate(task.blkio_ticks, old[0].blkio_ticks, dt)
            wait = ticks / USER_HZ * 100 if ticks is not None else None
        if read_bps is None and write_bps is None:  # not in the sample before: as recorded
            read_bps, write_bps = _float(doc.get("read_bps")), _float(doc.get("write_bps"))
        rates[task.key] = TaskRates(task, read_bps, write_bps, None, None, wait)
        if isinstance(doc.get("cgroup"), str):
            cgroups[task.key] = doc["cgroup"]
    process_sample = ProcessSample(
        monotonic=sample.monotonic,
        wall_time=sample.wall_time,
        uptime_ticks=None,
        tasks=MappingProxyType({t.key: t for t, _ in tasks.values()}),
        delayacct=DelayAcct.UNKNOWN,
    )
    return ProcessFrame(
        sample=process_sample,
        rates=MappingProxyType(rates),
        totals=MappingProxyType({}),
        detail_rates=MappingProxyType({}),
        cgroups=MappingProxyType(cgroups),
    )


__all__ = [
    "process_frame",
]
