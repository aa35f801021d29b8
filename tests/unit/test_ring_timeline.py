"""The TUI's history ring: a Timeline of the last minutes of frames, bounded in memory."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame, ProcessFrame
from iotop_plus.sampling.processes.delayacct import DelayAcct
from iotop_plus.sampling.processes.pid_files import IoCounters
from iotop_plus.sampling.processes.rates import ProcessSample, TaskCounters, TaskRates, TaskTotals
from iotop_plus.sampling.store.packed import KEY_EVERY
from iotop_plus.sampling.store.ring import RingTimeline, fill, strip_processes
from iotop_plus.sampling.topology.inventory import Inventory
from tests.tui.canned import HOST_ROOTS, CannedSampler


def canned_frames(count: int) -> list[Frame]:
    """``count`` frames of the tui_host fixture, one second apart (wall 1.7e9 + n)."""
    source = LiveSource(HOST_ROOTS, CannedSampler())
    return [source.next_frame() for _ in range(count)]


def test_lookups_by_wall_time() -> None:
    frames = canned_frames(10)
    ring = fill(RingTimeline(minutes=15, interval=1.0), frames)
    t0 = frames[0].wall_time
    assert ring.span() == (t0, t0 + 9)
    assert ring.frame_at(t0 + 3) == frames[3]
    assert ring.frame_at(t0 + 3.7) == frames[3]  # the last one before
    assert ring.frame_at(t0 - 100) == frames[0]  # earlier than all: the first
    assert ring.frame_at(t0 + 100) == frames[9]
    assert ring.step(t0 + 3, 1) == frames[4]
    assert ring.step(t0 + 3, -2) == frames[1]
    assert ring.step(t0 + 3, -50) == frames[0]  # clamped
    assert ring.step(t0 + 3, 50) == frames[9]
    window = ring.window(t0 + 5, 3)
    assert [f.seq for f in window] == [f.seq for f in frames[3:6]]  # (end-3, end]


def test_an_empty_ring_answers_none() -> None:
    ring = RingTimeline()
    assert ring.span() is None
    assert ring.frame_at(1.0) is None
    assert ring.step(1.0, -1) is None
    assert ring.window(1.0, 60) == []


def test_the_ring_keeps_minutes_at_the_current_interval() -> None:
    frames = canned_frames(200)
    ring = fill(RingTimeline(minutes=1, interval=1.0), frames)
    # One minute at 1 s: 61 frames at most (both ends), never more however many come.
    assert len(ring) == 61
    assert ring.span() == (frames[-61].wall_time, frames[-1].wall_time)
    ring.set_interval(5.0)  # slower: fewer frames make the same minutes
    assert len(ring) == 13
    ring.set_interval(0.25)
    assert ring.capacity == ring.max_capacity == 241
    # Frames older than the minutes are dropped even when the count would allow them.
    fill(ring, frames[:3])  # wall clock stepped back: the ring restarts there
    assert len(ring) == 3


def test_lookups_after_the_ring_wrapped_never_reach_frames_out_of_the_window() -> None:
    """The frames out of the window stay a while as the base of the oldest one shown; no
    lookup answers with them."""
    frames = canned_frames(150)
    ring = fill(RingTimeline(minutes=1, interval=1.0), frames)
    shown = frames[-61:]
    t0 = shown[0].wall_time
    assert len(ring) == 61 and ring.frames() == shown
    assert ring.span() == (t0, frames[-1].wall_time)
    assert ring.frame_at(t0 - 30) == shown[0]  # earlier than the window: its first frame
    assert ring.frame_at(t0) == shown[0]
    assert ring.step(t0 + 2, -50) == shown[0]  # clamped to the window
    assert ring.step(t0, 3) == shown[3]
    assert [f.seq for f in ring.window(t0 + 1, 30)] == [f.seq for f in shown[:2]]
    assert ring.window(t0 - 5, 3) == []
    fill(ring, frames[:2])  # the wall clock stepped back: nothing of before is left
    assert ring.frames() == frames[:2] and ring.span() == (frames[0].wall_time, frames[1].wall_time)


def test_dropping_the_oldest_frames_packs_nothing_again() -> None:
    """Once the ring is full, an append packs one frame: the frames kept are the objects
    packed when they came (re-packing the oldest at each drop cost 2 ms a frame at 200
    devices, #25), and at most KEY_EVERY frames are kept beyond the window."""
    frames = canned_frames(140)
    ring = fill(RingTimeline(minutes=1, interval=1.0), frames[:70])
    held = {id(p): p for p in ring._frames}
    packs: list[Frame] = []
    real = ring._packer.pack

    def pack(frame: Frame, *rest: Any) -> Any:
        packs.append(frame)
        return real(frame, *rest)

    ring._packer.pack = pack  # type: ignore[method-assign,assignment]
    fill(ring, frames[70:])
    assert len(packs) == 70
    later = list(ring._frames)
    assert all(held.get(id(p), p) is p for p in later)
    assert len(later) - len(ring) <= KEY_EVERY
    assert ring.frames() == frames[-61:]


def test_bad_minutes_are_refused() -> None:
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="history minutes"):
            RingTimeline(minutes=bad)


def test_frames_share_the_inventory_object() -> None:
    ring = fill(RingTimeline(), canned_frames(5))
    inventories = {id(f.inventory) for f in ring.frames()}
    assert len(inventories) == 1


def test_a_names_only_early_frame_is_not_kept() -> None:
    frame = canned_frames(1)[0]
    early = dataclasses.replace(frame, inventory=Inventory({}), inventory_changed=True)
    ring = RingTimeline()
    ring.append(early)
    assert len(ring) == 0


def _task(pid: int) -> TaskCounters:
    io = IoCounters(0, 0, 0, 0, pid * 1000, 0, 0)
    return TaskCounters(pid, pid, pid, f"p{pid}", "", 0, "root", "S", 1, io, None)


def _with_processes(frame: Frame, count: int) -> Frame:
    tasks = {(pid, pid): _task(pid) for pid in range(1, count + 1)}
    rates = {
        key: TaskRates(task, float(key[0]), 0.0, None, None, None) for key, task in tasks.items()
    }
    totals = {key: TaskTotals(task, key[0], 0, None, None, None) for key, task in tasks.items()}
    sample = ProcessSample(frame.monotonic, frame.wall_time, None, tasks, DelayAcct.ON)
    procs = ProcessFrame(sample, MappingProxyType(rates), totals, {})
    return dataclasses.replace(frame, processes=procs)


def test_only_the_busiest_processes_are_kept() -> None:
    frame = _with_processes(canned_frames(1)[0], 500)
    ring = RingTimeline(top_processes=20)
    ring.append(frame)
    kept = ring.frames()[0].processes
    assert kept is not None
    assert sorted(pid for pid, _ in kept.rates) == list(range(481, 501))
    assert set(kept.sample.tasks) == set(kept.rates) == set(kept.totals)
    # The original frame, still in use by the live view, is untouched.
    assert frame.processes is not None and len(frame.processes.sample.tasks) == 500


def test_without_rates_the_biggest_totals_are_kept() -> None:
    frame = _with_processes(canned_frames(1)[0], 50)
    assert frame.processes is not None
    first = dataclasses.replace(
        frame, processes=dataclasses.replace(frame.processes, rates=MappingProxyType({}))
    )
    kept = strip_processes(first, 5).processes
    assert kept is not None
    assert sorted(pid for pid, _ in kept.totals) == [46, 47, 48, 49, 50]


def test_memory_stays_bounded_with_many_processes() -> None:
    base = canned_frames(1)[0]
    ring = RingTimeline(minutes=1, interval=1.0, top_processes=20)
    template = _with_processes(base, 2000)
    for n in range(300):
        sample = dataclasses.replace(base.sample, wall_time=base.wall_time + n)
        ring.append(dataclasses.replace(template, sample=sample))
    assert len(ring) == 61
    assert all(f.processes is not None and len(f.processes.rates) == 20 for f in ring.frames())
