"""What the frame store keeps of a frame: the busiest processes, the inventory object, its own
rates after a dropped frame or a clock step, and no early frame that lists names only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record import store as store_module
from iotop_plus.record.store import FrameStore, strip_processes
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.topology.inventory import Inventory
from tests.unit.store_frames import canned_frames, synthetic_frames, with_processes
from tests.unit.test_frame_store import _same


def _fill(store: FrameStore, frames: list[Frame]) -> FrameStore:
    for frame in frames:
        store.append(frame)
    store.wait_encoded()
    return store


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few frames: most frames are rebuilt from a closed chunk's stream."""
    monkeypatch.setattr(store_module, "OPEN_CELLS", 1)


def test_a_names_only_early_frame_is_not_kept() -> None:
    frame = canned_frames(1)[0]
    early = dataclasses.replace(frame, inventory=Inventory({}), inventory_changed=True)
    store = FrameStore()
    store.append(early)
    assert len(store) == 0


@pytest.mark.usefixtures("small_chunks")
def test_frames_share_the_inventory_object_rebuilt_or_not() -> None:
    frames = canned_frames(12)
    store = _fill(FrameStore(), frames)
    back = store.frames()
    assert back[2] is not frames[2]  # rebuilt from its chunk
    assert len({id(f.inventory) for f in back}) == 1


def test_only_the_busiest_processes_are_kept() -> None:
    frame = with_processes(canned_frames(1)[0], 500)
    store = FrameStore(top_processes=20)
    store.append(frame)
    kept = store.frames()[0].processes
    assert kept is not None
    assert sorted(pid for pid, _ in kept.rates) == list(range(481, 501))
    assert set(kept.sample.tasks) == set(kept.rates) == set(kept.totals)
    # The original frame, still in use by the live view, is untouched.
    assert frame.processes is not None and len(frame.processes.sample.tasks) == 500


def test_without_rates_the_biggest_totals_are_kept() -> None:
    frame = with_processes(canned_frames(1)[0], 50)
    assert frame.processes is not None
    first = dataclasses.replace(
        frame, processes=dataclasses.replace(frame.processes, rates=MappingProxyType({}))
    )
    kept = strip_processes(first, 5).processes
    assert kept is not None
    assert sorted(pid for pid, _ in kept.totals) == [46, 47, 48, 49, 50]


@pytest.mark.usefixtures("small_chunks")
def test_frames_with_many_processes_come_back_with_the_top_ones() -> None:
    base = canned_frames(1)[0]
    template = with_processes(base, 2000)
    store = FrameStore(minutes=1, interval=1.0, top_processes=20)
    frames = [
        dataclasses.replace(
            template, sample=dataclasses.replace(base.sample, wall_time=base.wall_time + n)
        )
        for n in range(100)
    ]
    _fill(store, frames)
    assert len(store) == 61
    assert all(f.processes is not None and len(f.processes.rates) == 20 for f in store.frames())


@pytest.mark.usefixtures("small_chunks")
def test_frames_after_a_dropped_one_and_a_clock_step_keep_their_own_rates(
    mem_path: Path,
) -> None:
    frames = list(synthetic_frames(mem_path, 12))
    # Frame 4 never reaches the store (a slow UI): frame 5's rates are over 3-4, not 3-5.
    appended = frames[:4] + frames[5:9]
    store = _fill(FrameStore(15, 0.25), appended)
    for got, want in zip(store.frames(), appended, strict=True):
        _same(got, want)
    # The wall clock steps back: frames in the new one's future go, the rest stay equal.
    stepped = dataclasses.replace(
        frames[9], sample=dataclasses.replace(frames[9].sample, wall_time=frames[6].wall_time)
    )
    _fill(store, [stepped, frames[10]])
    now = [*frames[:4], frames[5], stepped, frames[10]]
    for got, one in zip(store.frames(), now, strict=True):
        _same(got, one)


@pytest.mark.usefixtures("small_chunks")
def test_a_frame_with_new_devices_keeps_its_own_inventory_and_the_frames_after_share_it(
    mem_path: Path,
) -> None:
    frames = list(synthetic_frames(mem_path, 12))
    # The devices changed at frame 5: a new inventory object, then the same one again.
    changed = dataclasses.replace(frames[5].inventory)
    appended = frames[:5] + [dataclasses.replace(f, inventory=changed) for f in frames[5:]]
    store = _fill(FrameStore(15, 0.25), appended)
    back = store.frames()
    for got, want in zip(back, appended, strict=True):
        _same(got, want)
    assert back[4].inventory is frames[4].inventory
    assert all(f.inventory is changed for f in back[5:])
