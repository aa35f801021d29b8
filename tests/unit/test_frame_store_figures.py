"""The charts' figures of an encoded chunk are packed per device (nine float32 a device a frame
were 7.8 MB of a 15-minute ring at 0.25 s with 60 devices) and read back bit for bit."""

from __future__ import annotations

import math
from array import array
from pathlib import Path

import pytest

from iotop_plus.record import store as store_module
from iotop_plus.record.store import FrameStore
from iotop_plus.record.store_chunk import WIDTH, frame_figures
from iotop_plus.record.store_figures import PACKED_FROM, PackedFigures
from iotop_plus.sampling.store.timeline import METRICS
from tests.unit.store_frames import DEVICES, synthetic_frames


def test_a_chunks_figures_come_back_bit_for_bit_whatever_device_is_read(
    mem_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "OPEN_CELLS", 25 * DEVICES)
    frames = list(synthetic_frames(mem_path, 80))
    store = FrameStore(15, 0.25, background=False)
    for frame in frames:
        store.append(frame)
    closed = [c for c in store._chunks if not c.open]
    assert len(closed) >= 2 and all(
        c.figures is None and c.packed_figures is not None for c in closed
    )
    names = list(frames[-1].sample.counters)
    for device in (names[3], names[0], names[3], names[-1]):  # the chunk keeps one block
        cols = store.columns(device, 0.0, frames[-1].wall_time)
        assert list(cols.walls) == [f.wall_time for f in frames]
        for frame, *values in zip(frames, *(cols.figures[m] for m in METRICS), strict=True):
            want = frame_figures([device], frame.rates)
            got = array("f", values)
            assert got.tobytes() == want.tobytes() or (
                all(math.isnan(v) for v in want) and all(math.isnan(v) for v in got)
            ), (device, frame.seq)


def test_idle_devices_figures_pack_to_almost_nothing_and_busy_ones_below_their_size() -> None:
    frames, devices = 84, 60
    idle: array[float] = array("f", [0.0] * (frames * devices * WIDTH))
    assert PackedFigures(idle, devices, WIDTH).nbytes() < 0.05 * len(idle) * 4
    busy: array[float] = array("f")
    for f in range(frames):
        for d in range(devices):
            base = 100.0 + d + math.sin(f / 7.0 + d) * 40.0
            busy.extend(
                [
                    base,
                    base / 3,
                    base * 4.1,
                    base * 1.37,
                    0.9 + f % 5 / 10,
                    1.7,
                    0.31,
                    2.0,
                    0.1 * (f % 10),
                ]
            )
    packed = PackedFigures(busy, devices, WIDTH)
    assert packed.nbytes() < 0.8 * len(busy) * 4
    block = packed.device(7)
    assert (
        block.tobytes()
        == array(
            "f",
            [
                busy[f * devices * WIDTH + 7 * WIDTH + m]
                for m in range(WIDTH)
                for f in range(frames)
            ],
        ).tobytes()
    )


def test_a_chunk_of_a_few_frames_keeps_its_figures_as_they_came(
    mem_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A large host's chunks (2 frames at 2,000 devices): a chart would inflate most of its
    # window's figures at a switch of device.
    monkeypatch.setattr(store_module, "OPEN_CELLS", (PACKED_FROM - 1) * DEVICES)
    frames = list(synthetic_frames(mem_path, 3 * PACKED_FROM))
    store = FrameStore(15, 0.25, background=False)
    for frame in frames:
        store.append(frame)
    closed = [c for c in store._chunks if not c.open]
    assert closed and all(c.figures is not None and c.packed_figures is None for c in closed)
    assert all(c.frames is None and c.pieces for c in closed)  # encoded all the same
    # Its frames' part values stay the objects they came as, shared with the chunks beside
    # it (a packed copy a chunk would pickle a big host's queue settings every 2 frames).
    assert all(c.packed is None and c.unrecorded is not None for c in closed)
    first, second = closed[0].unrecorded, closed[1].unrecorded
    assert first and second and first[0] and second[0]
    assert first[0]["parts"]["queues"] is second[0]["parts"]["queues"]
