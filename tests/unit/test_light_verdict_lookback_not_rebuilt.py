"""The Device tab's verdict looks back on the frames just before the one shown, at every frame.

Rebuilding those from the frame store's chunks (their parts: health for every device) was half
the TUI's busy time at 2,000 devices (#25); the store keeps its last frames as they came.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from iotop_plus.record import store_decode
from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.why.lookback import RECENT
from iotop_plus.why.verdicts import recent_frames
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.unit.test_frame_store import _same


def recent_rates(device: str, frame: Frame, timeline: Timeline) -> list[DeviceRates]:
    """``device``'s rates in the frames the verdict looks back on."""
    return [r for f in recent_frames(frame, timeline) if (r := f.rates.get(device)) is not None]


def canned_frames(count: int) -> list[Frame]:
    """``count`` frames of the tui_host fixture, one second apart."""
    source = LiveSource(HOST_ROOTS, CannedSampler())
    return [source.next_frame() for _ in range(count)]


def counted_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A list that gets one entry per frame the store rebuilds from now on."""
    rebuilt: list[object] = []
    real = store_decode.recorded_frame

    def counting(*args: Any, **kwargs: Any) -> Frame:
        rebuilt.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(store_decode, "recorded_frame", counting)
    return rebuilt


def test_the_verdicts_lookback_rebuilds_no_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = canned_frames(40)
    ring = FrameStore(minutes=15, interval=1.0, background=False)
    rebuilt = counted_rebuilds(monkeypatch)
    device = next(name for name, r in frames[-1].rates.items() if r is not None)
    for frame in frames:
        ring.append(frame)
        rebuilt.clear()
        looked_back = recent_rates(device, frame, ring)  # what the Device tab asks each frame
        assert not rebuilt, f"frame {frame.seq}: {len(rebuilt)} frames rebuilt"
        earlier = [f for f in frames if f.wall_time < frame.wall_time][-RECENT:]
        assert looked_back == [r for f in earlier if (r := f.rates.get(device)) is not None]


def test_older_frames_are_still_rebuilt_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = canned_frames(50)  # 40 in one wall-clock minute, 10 in the next
    ring = FrameStore(minutes=15, interval=1.0, background=False)
    rebuilt = counted_rebuilds(monkeypatch)
    for frame in frames:
        ring.append(frame)
    for got, want in zip(ring.frames(), frames, strict=True):
        _same(got, want)
    assert rebuilt  # (the first chunk's, encoded)
    assert ring.window(frames[-1].wall_time, 3.5) == frames[-4:]
    _same(ring.frame_at(frames[5].wall_time), frames[5])


def test_a_late_frame_looks_back_on_five_frames_not_its_long_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frame that came late (a stalled host: 10 s since the one before at -i 1) once made the
    look-back a window of 65 s: every frame in it rebuilt, with its processes, at every frame
    shown, and kept as the ring's last window (the TUI's memory grew in a soak)."""
    frames = canned_frames(40)
    ring = FrameStore(minutes=15, interval=1.0, background=False)
    for frame in frames:
        ring.append(frame)
    shown = dataclasses.replace(frames[25], elapsed_s=10.0)  # older than the frames kept whole
    rebuilt = counted_rebuilds(monkeypatch)
    device = next(name for name, r in frames[-1].rates.items() if r is not None)
    looked_back = recent_rates(device, shown, ring)
    earlier = frames[25 - RECENT : 25]
    assert looked_back == [r for f in earlier if (r := f.rates.get(device)) is not None]
    assert len(rebuilt) <= 2 * (RECENT + 1), len(rebuilt)  # a frame and the one before it
