"""#25, TUI memory with the Processes tab open: a frame in the history ring costs only what
changed since the frames before it.

With the Processes tab open each frame carries the top processes, the active cgroups and
every device's health; the ring pickled and compressed those alone per frame (~4.4 KB a frame
at 60 devices), so the 20-minute soak at 0.25 s grew past 75 MB. They are now compressed
against a recent frame's (zlib's preset dictionary), and the health part's ages, the only
part of it that moves every frame, are rebuilt from its readings and the frame's time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import Frame, LiveSource
from iotop_plus.sampling.health import DeviceHealth
from iotop_plus.sampling.health_part import HealthFrame
from iotop_plus.sampling.packed_frames import KEY_EVERY
from iotop_plus.sampling.ring_timeline import RingTimeline, strip_processes
from tests.support.memory import bytes_kept
from tests.support.synthetic import SyntheticTree

DEVICES = 60


def _frames(base: Path, count: int) -> Iterator[Frame]:
    """Frames of 60 synthetic disks (6 busy) 0.25 s apart, each with this host's processes
    (read once), every device's health reading with its age, as the live source makes it."""
    tree = SyntheticTree(base, DEVICES, busy_fraction=0.1)
    disks = LiveSource(tree.roots)
    host = LiveSource(Roots(), devices=False)
    host.want("processes", True)
    try:
        host.next_frame()
        processes = host.next_frame().processes  # with rates
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
                processes=processes,
                health=health,
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
    # now ~2.6 KB, of which the parts are ~0.3 KB.
    assert per < 3500, f"{per:.0f} bytes a frame"


def test_frames_with_health_come_back_equal_with_their_ages(mem_path: Path) -> None:
    frames = list(_frames(mem_path, 3 * KEY_EVERY + 7))
    ring = RingTimeline(15, 0.25)
    ring.capacity = 2 * KEY_EVERY + 3  # wraps: the oldest kept are packed again alone
    for frame in frames:
        ring.append(frame)
    kept = [strip_processes(f, ring.top_processes) for f in frames[-ring.capacity :]]
    assert ring.frames() == kept
    for frame in kept[::7]:
        found = ring.frame_at(frame.wall_time)
        assert found == frame
        assert found is not None and found.health is not None and frame.health is not None
        assert dict(found.health.age_s) == dict(frame.health.age_s)


def test_recorded_ages_that_are_not_the_readings_own_are_kept(mem_path: Path) -> None:
    frames = list(_frames(mem_path, 5))
    # A replayed frame's ages come from the recording, not from this process's clock.
    odd = [
        dataclasses.replace(
            f, health=dataclasses.replace(f.health, age_s=dict.fromkeys(f.health.age_s, 12.5))
        )
        for f in frames
        if f.health is not None
    ]
    ring = RingTimeline(15, 0.25)
    for frame in odd:
        ring.append(frame)
    assert [f.health for f in ring.frames()] == [f.health for f in odd]
