"""#25, TUI memory with the Processes tab open: a frame in the history ring costs only what
changed since the frames before it.

With the Processes tab open each frame carries the top processes, the active cgroups and
every device's health; the ring pickled and compressed those alone per frame (~4.4 KB a frame
at 60 devices), so the 20-minute soak at 0.25 s grew past 75 MB. They are now compressed
against a recent frame's (zlib's preset dictionary), and the health part's ages, the only
part of it that moves every frame, are rebuilt from its readings and the frame's time. Each
part is pickled alone and the processes one task at a time, so that new processes at the top
cost their own bytes and not a renumbering of everything pickled after them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame, ProcessFrame
from iotop_plus.sampling.health.gate import HEALTH, HealthPart
from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.sampling.processes.pid_files import IoCounters
from iotop_plus.sampling.processes.rates import TaskCounters, TaskKey, TaskRates, TaskTotals
from iotop_plus.sampling.store.packed import KEY_EVERY
from iotop_plus.sampling.store.ring import RECENT_KEPT, RingTimeline, strip_processes
from tests.support.memory import bytes_kept
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


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_a_processes_tab_frame_costs_what_changed_not_its_whole_parts(mem_path: Path) -> None:
    ring = RingTimeline(15, 0.25)
    frames = _frames(mem_path, 2 * KEY_EVERY + 256)
    for _ in range(2 * KEY_EVERY):  # the ring's own caches are full: what grows now is frames
        ring.append(next(frames))
    held = bytes_kept(ring.append, frames)
    per = held / 256
    # Was ~5.4 KB (the top processes and 60 devices' health pickled and compressed alone),
    # then ~2.7 KB (the parts in one pickle, the frame's shell its own), now ~2.0 KB: the
    # parts ~0.3 KB, the shell a template's plain changes; the rest is the tracer's view of
    # the ring's caches turning over.
    assert per < 2400, f"{per:.0f} bytes a frame"


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_new_processes_at_the_top_cost_their_own_bytes_not_the_other_parts(
    mem_path: Path,
) -> None:
    ring = RingTimeline(15, 0.25)
    frames = _frames(mem_path, 2 * KEY_EVERY + 256, churn=True)
    for _ in range(2 * KEY_EVERY):
        ring.append(next(frames))
    held = bytes_kept(ring.append, frames)
    per = held / 256
    # Was ~2.9 KB: the parts were one pickle, so three new processes at the top renumbered
    # every reference after them and the health part of 60 devices no longer matched the
    # base frame's bytes; now ~2.2 KB.
    assert per < 2600, f"{per:.0f} bytes a frame"


@pytest.mark.parametrize("churn", [False, True])
def test_frames_with_health_come_back_equal_with_their_ages(mem_path: Path, churn: bool) -> None:
    frames = list(_frames(mem_path, 3 * KEY_EVERY + 7, churn=churn))
    ring = RingTimeline(15, 0.25)
    ring.capacity = 2 * KEY_EVERY + 3  # wraps: the oldest kept are packed again alone
    for frame in frames:
        ring.append(frame)
    kept = [strip_processes(f, ring.top_processes) for f in frames[-ring.capacity :]]
    assert ring.frames() == kept
    for frame in kept[::7]:
        found = ring.frame_at(frame.wall_time)
        assert found == frame
        assert found is not None
        found_health, health = found.get(HealthPart), frame.get(HealthPart)
        assert found_health is not None and health is not None
        assert dict(found_health.age_s) == dict(health.age_s)


def test_recorded_ages_that_are_not_the_readings_own_are_kept(mem_path: Path) -> None:
    frames = list(_frames(mem_path, 5))
    # A replayed frame's ages come from the recording, not from this process's clock.
    odd = [
        dataclasses.replace(
            f,
            parts={HEALTH: dataclasses.replace(h, age_s=dict.fromkeys(h.age_s, 12.5))},
        )
        for f in frames
        if (h := f.get(HealthPart)) is not None
        if f.get(HealthPart) is not None
    ]
    ring = RingTimeline(15, 0.25)
    for frame in odd:
        ring.append(frame)
    assert [f.get(HealthPart) for f in ring.frames()] == [f.get(HealthPart) for f in odd]


def test_process_parts_the_records_cannot_hold_come_back_equal_too(mem_path: Path) -> None:
    frames = list(_frames(mem_path, 6 + RECENT_KEPT, churn=True))  # the odd ones rebuilt
    procs = frames[0].processes
    assert procs is not None
    first, second = list(procs.sample.tasks)[:2]
    odd = [
        # A rate whose task is not the sample's (kept whole), plain dicts, a rate of None,
        # a task with no totals and no cgroup, and totals in another order.
        dataclasses.replace(
            procs,
            rates={**procs.rates, first: procs.rates[second]},
        ),
        dataclasses.replace(
            procs,
            rates={k: (None if k == first else r) for k, r in procs.rates.items()},
            totals={k: t for k, t in procs.totals.items() if k != second},
            cgroups={k: c for k, c in procs.cgroups.items() if k != first},
        ),
        dataclasses.replace(procs, totals=dict(reversed(list(procs.totals.items())))),
    ]
    appended = [
        frames[0],
        *(dataclasses.replace(f, processes=p) for f, p in zip(frames[1:], odd, strict=False)),
        *frames[4:],
    ]
    ring = RingTimeline(15, 0.25)
    for frame in appended:
        ring.append(frame)
    back = ring.frames()
    assert back == appended
    assert [f.processes for f in back] == [f.processes for f in appended]
    reordered, original = back[3].processes, appended[3].processes
    assert reordered is not None and original is not None
    assert list(reordered.totals) == list(original.totals)
