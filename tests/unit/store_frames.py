"""Frames for the frame store's tests: the tui_host fixture's, a synthetic host's, and frames
with many processes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame, ProcessFrame
from iotop_plus.sampling.processes.delayacct import DelayAcct
from iotop_plus.sampling.processes.pid_files import IoCounters
from iotop_plus.sampling.processes.rates import ProcessSample, TaskCounters, TaskRates, TaskTotals
from tests.support.synthetic import SyntheticTree
from tests.tui.canned import HOST_ROOTS, CannedSampler

DEVICES = 60
"""Disks of the synthetic host."""


def canned_frames(count: int) -> list[Frame]:
    """``count`` frames of the tui_host fixture, one second apart (wall 1.7e9 + n)."""
    source = LiveSource(HOST_ROOTS, CannedSampler())
    try:
        return [source.next_frame() for _ in range(count)]
    finally:
        source.close()


def synthetic_frames(base: Path, count: int, *, processes: bool = False) -> Iterator[Frame]:
    """``count`` frames of a synthetic host of 60 busy disks, 0.25 s apart, made one by one."""
    tree = SyntheticTree(base, DEVICES)
    disks = LiveSource(tree.roots)
    host = LiveSource(Roots(), devices=False)
    host.want("processes", processes)
    try:
        for i in range(count):
            tree.advance(0.25)
            frame = disks.next_frame()
            procs = host.next_frame()
            wall = 1.7e9 + 0.25 * i
            yield dataclasses.replace(
                frame,
                sample=dataclasses.replace(frame.sample, wall_time=wall),
                processes=procs.processes,
            )
    finally:
        disks.close()
        host.close()


def _task(pid: int) -> TaskCounters:
    io = IoCounters(0, 0, 0, 0, pid * 1000, 0, 0)
    return TaskCounters(pid, pid, pid, f"p{pid}", "", 0, "root", "S", 1, io, None)


def with_processes(frame: Frame, count: int) -> Frame:
    """``frame`` with ``count`` processes; process ``n`` writes ``n`` bytes a second."""
    tasks = {(pid, pid): _task(pid) for pid in range(1, count + 1)}
    rates = {
        key: TaskRates(task, float(key[0]), 0.0, None, None, None) for key, task in tasks.items()
    }
    totals = {key: TaskTotals(task, key[0], 0, None, None, None) for key, task in tasks.items()}
    sample = ProcessSample(frame.monotonic, frame.wall_time, None, tasks, DelayAcct.ON)
    procs = ProcessFrame(sample, MappingProxyType(rates), totals, {})
    return dataclasses.replace(frame, processes=procs)
