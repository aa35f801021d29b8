"""What the frame store keeps of its frames' part values: fifteen minutes at 0.25 s is 3,601
frames, each with the TUI's parts (memory, queue settings, the throttle watch, health). Kept as
objects they were ~1.3 KB a frame at 60 devices; an encoded chunk keeps them packed, a few
dozen bytes a frame, and gives them back whole."""

from __future__ import annotations

import dataclasses
import gc
import tracemalloc
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record import store as store_module
from iotop_plus.record.store import RECENT_KEPT, FrameStore
from iotop_plus.record.store_values import Rest, pack
from iotop_plus.sampling.cgroups.reader import CgroupSample
from iotop_plus.sampling.cgroups.throttle_watch import ThrottleFrame
from iotop_plus.sampling.frame.model import CgroupFrame, Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.health.part import HealthFrame, ReadingAges
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.sampling.memory.dirty import Memory
from tests.support.synthetic import SyntheticTree

DEVICES = 60
CHUNK = 40
"""Frames a chunk (``OPEN_CELLS`` set to match): six a wall-clock minute."""
START = 1_700_000_040.0
"""The first frame's wall time, at a minute's start (a new minute starts a chunk)."""


def _disk_frames(base: Path, count: int) -> list[Frame]:
    """``count`` frames of 60 busy synthetic disks 0.25 s apart (with the queue settings)."""
    tree = SyntheticTree(base, DEVICES)
    source = live_source(tree.roots)
    try:
        source.next_frame()
        out = []
        for i in range(count):
            tree.advance(0.25)
            frame = source.next_frame()
            wall = START + 0.25 * i
            out.append(
                dataclasses.replace(frame, sample=dataclasses.replace(frame.sample, wall_time=wall))
            )
        return out
    finally:
        source.close()


def _readings(frame: Frame) -> MappingProxyType[str, DeviceHealth]:
    return MappingProxyType(
        {
            name: DeviceHealth("sysfs", temperature_c=30 + i % 7, read_monotonic=float(i))
            for i, name in enumerate(frame.sample.counters)
        }
    )


def _with_parts(frame: Frame, i: int, readings: MappingProxyType[str, DeviceHealth]) -> Frame:
    """``frame`` with the other parts the TUI's frames carry, made for it as the live parts
    make them: the memory figures, the throttle watch's (no limited cgroup) and the health
    (its readings shared, its ages worked out from its time)."""
    now = frame.monotonic
    empty = CgroupSample(now, frame.wall_time, "v2", "/sys/fs/cgroup", MappingProxyType({}))
    parts = dict(frame.parts)
    parts["memory"] = Memory(1000 + i, i % 3, 400_000, 200_000, written_pages=10**6 + i)
    parts["throttles"] = ThrottleFrame(
        CgroupFrame(empty, MappingProxyType({})), 0.002, 0.0001 * (i % 7)
    )
    parts["health"] = HealthFrame(readings, ReadingAges(readings, now), None, "kmsg")
    return dataclasses.replace(frame, parts=MappingProxyType(parts))


def test_an_encoded_chunk_keeps_its_frames_part_values_in_a_few_dozen_bytes_a_frame(
    mem_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "OPEN_CELLS", CHUNK * DEVICES)
    count = 6 * CHUNK
    frames = _disk_frames(mem_path / "tree", 2 * CHUNK + count)
    readings = _readings(frames[0])
    frames.reverse()  # (popped from the end: each frame goes once appended)
    store = FrameStore(15, 0.25, background=False)
    for i in range(2 * CHUNK):
        store.append(_with_parts(frames.pop(), i, readings))
    store._close(store._chunks[-1])  # every chunk encoded, before and after
    gc.collect()
    tracemalloc.start()
    try:
        # What is made from here on and stays is what the store keeps of the frames after:
        # their part values, the figures and the stream.
        before = tracemalloc.get_traced_memory()[0]
        nbytes = store.nbytes()
        for i in range(count):
            store.append(_with_parts(frames.pop(), i, readings))
        store._close(store._chunks[-1])  # (encoded too: not a chunk of frames as they came)
        gc.collect()
        kept = (tracemalloc.get_traced_memory()[0] - before - (store.nbytes() - nbytes)) / count
    finally:
        tracemalloc.stop()
    # Besides what ``nbytes`` counts (the figures, the stream, the packed values): the open
    # chunk's frames as they came, the arrays' spare room and the list of pieces. Kept as
    # objects, the values made it ~1,300 bytes more a frame.
    assert kept < 400, f"{kept:.0f} bytes a frame besides the chunks' bytes"
    closed = [c for c in store._chunks if not c.open]
    assert closed and all(c.unrecorded is None and c.packed for c in closed)
    packed = sum(c.packed.nbytes() for c in closed if c.packed) / sum(len(c) for c in closed)
    assert packed < 150, f"{packed:.0f} packed bytes a frame"


def test_frames_from_an_encoded_chunk_have_their_part_values_back(
    mem_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "OPEN_CELLS", CHUNK * DEVICES)
    frames = _disk_frames(mem_path / "tree", 2 * CHUNK + RECENT_KEPT)
    readings = _readings(frames[0])
    made = [_with_parts(frame, i, readings) for i, frame in enumerate(frames)]
    store = FrameStore(15, 0.25, background=False)
    for frame in made:
        store.append(frame)
    back = store.frames()
    assert back[0] is not made[0] and store._chunks[0].packed  # rebuilt from its chunk
    for got, want in zip(back, made, strict=True):
        assert list(got.parts) == list(want.parts)
        for key in ("memory", "throttles", "queues"):
            assert got.parts[key] == want.parts[key], (key, got.seq)
        health = got.parts["health"]
        assert isinstance(health, HealthFrame)
        assert dict(health.age_s) == dict(want.parts["health"].age_s)  # type: ignore[attr-defined]


class Refuses:
    """A plug-in part's value that does not pickle."""

    def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
        raise TypeError("does not pickle")


def test_values_that_do_not_pickle_are_kept_and_the_rest_packed() -> None:
    odd = Refuses()
    memory = Memory(1, 2, 3, 4)
    rests: list[Rest] = [
        {"parts": MappingProxyType({"memory": memory, "odd": odd})},
        None,
        {"problems": ("odd: unreadable",), "parts": MappingProxyType({"odd": odd})},
        {"parts": MappingProxyType({"odd": odd, "memory": memory})},
    ]
    packed = pack(rests)
    assert set(packed.kept) == {("parts", "odd")}
    back = packed.unpack()
    assert back == rests
    assert [list(r["parts"]) for r in back if r] == [["memory", "odd"], ["odd"], ["odd", "memory"]]
    assert back[2] is not None and back[2]["parts"]["odd"] is odd


def test_the_open_chunk_holds_at_most_42_frames_as_objects_at_60_devices(mem_path: Path) -> None:
    # A frame as it came is ~45 KB at 60 busy devices (its counters, rates and processes): the
    # open chunk at its fullest is the high-water mark of the TUI's memory; 84 frames held 3.8 MB.
    store = FrameStore(15, 0.25, background=False)
    most = 0
    for frame in _disk_frames(mem_path / "tree", 100):
        store.append(frame)
        most = max(most, len(store._chunks[-1].frames or ()))
    assert 40 <= most <= 42
