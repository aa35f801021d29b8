"""The history ring keeps frames compactly (#25, TUI memory): a few dozen bytes a device a frame.

Fifteen minutes at 0.25 s with ~60 devices held ~380 bytes a device a frame as objects (138 MB
RSS); the ring now packs the disk counters as numbers and the per-frame parts as one compressed
blob, and rebuilds the very same frame when it is looked up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.packed import KEY_EVERY, Packer
from iotop_plus.sampling.store.ring import RECENT_KEPT, RingTimeline, strip_processes
from tests.support.memory import bytes_kept
from tests.support.synthetic import SyntheticTree

DEVICES = 60


def _frames(base: Path, count: int, *, processes: bool = False) -> Iterator[Frame]:
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


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_the_ring_keeps_a_frame_in_under_100_bytes_a_device(mem_path: Path) -> None:
    ring = RingTimeline(15, 0.25)
    frames = _frames(mem_path, 301)
    ring.append(next(frames))  # the sources' caches are made: what grows now is the ring
    held = bytes_kept(ring.append, frames)
    per = held / (len(ring) - 1) / DEVICES
    # As objects, each frame's counters alone were ~650 bytes a device; then ~74 with each
    # frame's own shell (~400 bytes), ~67 with a template's changes, ~64 with the counters'
    # differences compressed at zlib's level 6, now ~66.5 at level 2 (level 6 took a third of
    # the frame's time at 2,000 devices).
    assert per < 69, f"{per:.0f} bytes a device a frame"


def test_every_frame_comes_back_equal_after_the_ring_wrapped(mem_path: Path) -> None:
    frames = list(_frames(mem_path, 3 * KEY_EVERY + 7, processes=True))
    ring = RingTimeline(15, 0.25)
    ring.capacity = 2 * KEY_EVERY + 3  # wraps: the oldest kept are rebased on full values
    for frame in frames:
        ring.append(frame)
    kept = [strip_processes(f, ring.top_processes) for f in frames[-ring.capacity :]]
    assert ring.frames() == kept
    for frame in kept[::5]:
        assert ring.frame_at(frame.wall_time) == frame
    end = kept[-1].wall_time
    assert ring.window(end, 2.0) == [f for f in kept if end - 2.0 < f.wall_time <= end]
    shown = ring.frame_at(kept[40].wall_time)
    assert shown is not None and shown.processes == kept[40].processes
    assert shown.rates == kept[40].rates and shown.sample.counters == kept[40].sample.counters


def test_frames_after_a_dropped_one_and_a_clock_step_keep_their_own_rates(
    mem_path: Path,
) -> None:
    frames = list(_frames(mem_path, 12))
    ring = RingTimeline(15, 0.25)
    # Frame 4 never reaches the ring (a slow UI): frame 5's rates are over 3-4, not 3-5.
    appended = frames[:4] + frames[5:9]
    for frame in appended:
        ring.append(frame)
    assert ring.frames() == appended
    # The wall clock steps back: frames in the new one's future go, the rest stay equal.
    stepped = dataclasses.replace(
        frames[9], sample=dataclasses.replace(frames[9].sample, wall_time=frames[6].wall_time)
    )
    ring.append(stepped)
    ring.append(frames[10])
    assert ring.frames() == [*frames[:4], frames[5], stepped, frames[10]]


def test_the_charts_window_asked_again_is_not_rebuilt(
    mem_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = list(_frames(mem_path, 80))
    ring = RingTimeline(15, 0.25)
    for frame in frames:
        ring.append(frame)
    rebuilt: list[float] = []
    real = Packer.frame

    def counting(*args: Any) -> Frame:
        made = real(*args)
        rebuilt.append(made.wall_time)
        return made

    monkeypatch.setattr(Packer, "frame", staticmethod(counting))
    end = frames[70].wall_time
    first = ring.window(end, 15.0)  # 60 frames: what a paused history's charts redraw
    assert len(first) == 60 and len(rebuilt) == 60
    assert ring.window(end, 15.0) == first and len(rebuilt) == 60  # the same, not rebuilt


def test_a_frame_with_new_devices_keeps_its_own_inventory_and_the_frames_after_share_it(
    mem_path: Path,
) -> None:
    frames = list(_frames(mem_path, 12 + RECENT_KEPT))  # the first 12 rebuilt when read
    # The devices changed at frame 5: a new inventory object, then the same one again.
    changed = dataclasses.replace(frames[5].inventory)
    later = [dataclasses.replace(f, inventory=changed) for f in frames[5:]]
    appended = frames[:5] + later
    ring = RingTimeline(15, 0.25)
    for frame in appended:
        ring.append(frame)
    back = ring.frames()
    assert back == appended
    assert back[4].inventory is frames[4].inventory
    assert all(f.inventory is changed for f in back[5:])
    assert [f.sample.wall_time for f in back] == [f.sample.wall_time for f in appended]
    assert [f.seq for f in back] == [f.seq for f in appended]


def test_frames_keep_sharing_templates_after_the_ring_wrapped(mem_path: Path) -> None:
    """The devices change every 10 frames (loop devices come and go), so the ring holds
    frames of several templates. Once the ring has wrapped, the frames appended keep sharing
    theirs: when the oldest frame was re-packed on its own at each drop, it took the template's
    role and each frame after got a shell of its own (~1 KB a frame)."""
    frames = list(_frames(mem_path, 120))
    ring = RingTimeline(15, 0.25)
    ring.capacity = 40
    appended: list[Frame] = []
    for i, frame in enumerate(frames):
        if i % 10 == 0:
            inventory = dataclasses.replace(frame.inventory)  # a new object, as on a change
        appended.append(dataclasses.replace(frame, inventory=inventory))
        ring.append(appended[-1])
    assert len(ring) == 40
    shown = list(ring._frames)[-40:]
    shells = {id(packed.shell) for packed in shown}
    assert len(shells) <= 5, f"{len(shells)} shells for 40 frames of 4-5 device sets"
    kept = [strip_processes(f, ring.top_processes) for f in appended[-40:]]
    assert ring.frames() == kept
    assert all(a.inventory is b.inventory for a, b in zip(ring.frames(), kept, strict=True))
