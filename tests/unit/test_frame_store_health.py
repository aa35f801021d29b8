"""Frames with every device's health come back from the frame store's encoded chunks with
their health ages, on a quiet host and on one where new processes come to the top each
frame."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record import store as store_module
from iotop_plus.record.store import FrameStore, strip_processes
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame, ProcessFrame
from iotop_plus.sampling.health.gate import HealthPart
from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.sampling.processes.pid_files import IoCounters
from iotop_plus.sampling.processes.rates import TaskCounters, TaskKey, TaskRates, TaskTotals
from tests.support.synthetic import SyntheticTree

DEVICES = 60


def _churned(processes: ProcessFrame, i: int) -> ProcessFrame:
    """The top 20 of frame ``i`` on a churning host (#25's soak starts ~1,000 ``dd`` a minute):
    three short ``dd`` of its own at the top, then the host's busiest 17 as they were."""
    keys = list(processes.sample.tasks)[:17]
    tasks: dict[TaskKey, TaskCounters] = {}
    rates: dict[TaskKey, TaskRates | None] = {}
    totals: dict[TaskKey, TaskTotals] = {}
    for n in range(3 * i, 3 * i + 3):
        task = TaskCounters(
            pid=90000 + n,
            tid=90000 + n,
            starttime=4_000_000 + n,
            comm="dd",
            cmdline=f"dd if=/var/tmp/churn/src-{n} of=/var/tmp/churn/dst-{n} bs=4k conv=fsync",
            uid=0,
            user="root",
            state="D",
            num_threads=1,
            io=IoCounters(16384 + n, 16384, 7, 6, 16384, 16384 + 4096 * (n % 5), 0),
            thread_ticks=None,
            ppid=1234,
        )
        tasks[task.key] = task
        rates[task.key] = TaskRates(task, 65536.0 + n, 131072.0 + n, 65536.0, 65536.0, None)
        totals[task.key] = TaskTotals(task, 16384, 16384 + n, 16384, 16384, None)
    tasks.update((k, processes.sample.tasks[k]) for k in keys)
    rates.update((k, processes.rates[k]) for k in keys if k in processes.rates)
    totals.update((k, processes.totals[k]) for k in keys if k in processes.totals)
    return dataclasses.replace(
        processes,
        sample=dataclasses.replace(processes.sample, tasks=MappingProxyType(tasks)),
        rates=MappingProxyType(rates),
        totals=MappingProxyType(totals),
        cgroups=MappingProxyType({k: processes.cgroups.get(k, "/") for k in tasks}),
    )


def _frames(base: Path, count: int, *, churn: bool = False) -> Iterator[Frame]:
    """Frames of 60 synthetic disks (6 busy) 0.25 s apart, each with this host's processes
    (read once; ``churn``: with three new ones at the top each frame), every device's health
    reading with its age, as the live source makes it."""
    tree = SyntheticTree(base, DEVICES, busy_fraction=0.1)
    disks = LiveSource(tree.roots)
    host = LiveSource(Roots(), devices=False)
    host.want("processes", True)
    try:
        host.next_frame()
        processes = host.next_frame().processes  # with rates
        assert processes is not None
        first = disks.next_frame()
        read_at = first.monotonic - 30.0
        readings = {
            name: DeviceHealth("sysfs", temperature_c=30 + i % 7, read_monotonic=read_at + i)
            for i, name in enumerate(first.sample.counters)
        }
        for i in range(count):
            tree.advance(0.25)
            frame = disks.next_frame()
            ages = {n: max(0.0, frame.monotonic - r.read_monotonic) for n, r in readings.items()}
            health = HealthFrame(readings, ages, {}, "kmsg")
            yield dataclasses.replace(
                frame,
                sample=dataclasses.replace(frame.sample, wall_time=1.7e9 + 0.25 * i),
                processes=_churned(processes, i) if churn else processes,
                parts={"health": health},
            )
    finally:
        disks.close()
        host.close()


@pytest.mark.parametrize("churn", [False, True])
def test_frames_with_health_come_back_with_their_ages(
    mem_path: Path, churn: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "OPEN_CELLS", 10 * DEVICES)  # chunks of 10 frames
    frames = list(_frames(mem_path, 40, churn=churn))
    store = FrameStore(15, 0.25)
    for frame in frames:
        store.append(frame)
    store.wait_encoded()
    kept = [strip_processes(f, store.top_processes) for f in frames]
    back = store.frames()
    assert back[3] is not kept[3]  # rebuilt from an encoded chunk
    for got, want in zip(back, kept, strict=True):
        got_health, health = got.get(HealthPart), want.get(HealthPart)
        assert got_health is not None and health is not None
        assert dict(got_health.age_s) == pytest.approx(dict(health.age_s)), got.seq
