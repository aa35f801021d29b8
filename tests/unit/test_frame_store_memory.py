"""The frame store keeps frames compactly (fifteen minutes at 0.25 s with about 60 devices stays
far under the TUI's 75 MB): its bytes a device a frame are a recording's plus the charts'
figures (packed once a chunk is encoded), and once full it holds no more as frames keep
coming."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotop_plus.record.store import DECODED_KEPT, RECENT_KEPT, FrameStore
from iotop_plus.record.store_chunk import WIDTH
from tests.unit.store_frames import DEVICES, synthetic_frames

FIGURES = WIDTH * 4
"""The charts' float32 figures: nine a device a frame."""


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_the_store_keeps_a_frame_in_a_dozen_bytes_a_device_beside_the_figures(
    mem_path: Path,
) -> None:
    store = FrameStore(15, 0.25)
    for frame in synthetic_frames(mem_path, 481, processes=True):  # two chunks' worth: one closed
        store.append(frame)
    store.wait_encoded()
    per = store.nbytes() / len(store) / DEVICES
    # The chunks' stream (the counters as predicted deltas, deflated, and each frame's top
    # processes, pressure and parts shared out over its devices) and the index: ~10.6 bytes;
    # the closed chunks' figures packed, ~60 % of their 36 bytes on these busy disks (the open
    # chunk's as they came): ~34 bytes in all, 46.6 with every chunk's figures as they came.
    assert per < 0.75 * FIGURES + 14, f"{per:.1f} bytes a device a frame"


@pytest.mark.slow
def test_a_full_store_holds_no_more_as_frames_keep_coming(mem_path: Path) -> None:
    store = FrameStore(1, 0.25)  # 241 frames; a chunk is a wall-clock minute, 240 frames
    frames = synthetic_frames(mem_path, 4 * 240 + 1)
    held = []
    for n, frame in enumerate(frames, 1):
        store.append(frame)
        if n % 240 == 1 and n > 2 * 240:  # full, at the same phase of a chunk each time
            store.wait_encoded()
            held.append((store.nbytes(), len(store._chunks), len(store._walls)))
    assert len(held) == 3
    sizes = [h[0] for h in held]
    # Growing, it would hold a chunk more each time: 240 frames of 60 devices, ~660 KB; what
    # varies is the index of frames out of the window (16 bytes each, cut every 1,024).
    assert max(sizes) - min(sizes) < 32 * 1024, held
    assert all(h[1] == held[0][1] for h in held), held  # as many chunks
    assert all(h[2] <= 2 * store.capacity + 1024 for h in held), held
    assert len(store._recent) <= RECENT_KEPT and len(store._decoded) <= DECODED_KEPT
