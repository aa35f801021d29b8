"""The TUI's history reaching back into recordings: older frames, then the ring, as one
Timeline (the rulings' "started at 03:10, it can scrub to 02:55")."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.joined import JoinedTimeline
from tests.tui.history_frames import varying_frames

T0 = 1_700_000_000.0


def _wall(frame: Frame | None) -> float:
    assert frame is not None
    return frame.wall_time


def _joined(
    opened: list[int], with_older: bool = True
) -> tuple[JoinedTimeline, list[Frame], list[Frame]]:
    frames = varying_frames(40, T0)
    recorded, live = frames[:30], frames[25:]  # the recorder overlaps the ring's start
    older = FrameStore(60.0, 1.0)
    ring = FrameStore(60.0, 1.0)
    for f in recorded:
        older.append(f)
    for f in live:
        ring.append(f)

    def open_older(_warn: object) -> FrameStore | None:
        opened.append(1)
        return older if with_older else None

    return JoinedTimeline(ring, open_older), recorded, live


def test_recordings_are_opened_only_when_a_scrub_passes_the_rings_start() -> None:
    opened: list[int] = []
    joined, _, live = _joined(opened)
    assert joined.span() == (live[0].wall_time, live[-1].wall_time)
    assert joined.frame_at(live[3].wall_time) == live[3]
    assert joined.step(live[5].wall_time, -2) == live[3]
    assert opened == []  # still inside the ring
    assert _wall(joined.frame_at(T0 + 10)) == T0 + 10  # before the ring: recorded
    assert opened == [1]
    assert joined.span() == (T0, live[-1].wall_time)


def test_stepping_crosses_the_join_both_ways_without_repeating_a_moment() -> None:
    joined, recorded, live = _joined([])
    back = joined.step(live[0].wall_time, -1)
    assert back is not None and back.wall_time == live[0].wall_time - 1  # recorded frame 24
    assert _wall(joined.step(live[1].wall_time, -3)) == live[0].wall_time - 2
    forward = joined.step(recorded[20].wall_time, 10)  # 20 -> 24 recorded, then the ring
    assert forward is not None and forward.wall_time == recorded[20].wall_time + 10
    assert forward == joined.frame_at(forward.wall_time)
    walls = [_wall(joined.step(T0, n)) for n in range(40)]
    assert walls == sorted(set(walls)) and len(walls) == 40


def test_the_chart_window_joins_recorded_and_ring_frames() -> None:
    joined, _, live = _joined([])
    window = joined.window(live[4].wall_time, 10.0)
    walls = [f.wall_time for f in window]
    assert walls == [live[4].wall_time - k for k in range(9, -1, -1)]
    assert window[-1] == live[4]


def test_no_recordings_is_the_ring_alone() -> None:
    opened: list[int] = []
    joined, _, live = _joined(opened, with_older=False)
    assert joined.frame_at(T0) == live[0]
    assert joined.step(live[0].wall_time, -5) == live[0]
    assert joined.span() == (live[0].wall_time, live[-1].wall_time) and opened == [1]


def test_a_recording_that_cannot_be_read_is_one_warning_and_the_ring_keeps_working() -> None:
    warned: list[str] = []
    ring = FrameStore(60.0, 1.0)
    frames = varying_frames(3, T0)
    for f in frames:
        ring.append(f)

    def broken(_warn: object) -> None:
        raise OSError("Permission denied")

    joined = JoinedTimeline(ring, broken, warn=warned.append)
    assert joined.step(frames[0].wall_time, -1) == frames[0]
    assert warned == ["recordings not used for history: Permission denied"]


def test_recordings_opened_in_the_background_never_hold_a_scrub() -> None:
    """The TUI opens them on a thread: while a slow (or hostile) file is being read, a scrub
    past the ring's start answers at once from the ring, and uses the recordings once open."""
    warned: list[str] = []
    frames = varying_frames(40, T0)
    older, ring = FrameStore(60.0, 1.0), FrameStore(60.0, 1.0)
    for f in frames[:30]:
        older.append(f)
    for f in frames[25:]:
        ring.append(f)
    release = threading.Event()

    def slow(warn: Callable[[str], object]) -> FrameStore:
        warn("bad.rec: the recording's header is missing or corrupt; skipped it")
        assert release.wait(30)
        return older

    joined = JoinedTimeline(ring, slow, warn=warned.append, background=True)
    assert joined.frame_at(T0 + 10) == frames[25]  # not open yet: the ring's first frame
    assert not joined.opened.is_set()
    release.set()
    assert joined.opened.wait(30)
    assert _wall(joined.frame_at(T0 + 10)) == T0 + 10
    assert warned == ["bad.rec: the recording's header is missing or corrupt; skipped it"]


def test_the_charts_columns_reach_into_the_recordings_once_they_are_open() -> None:
    opened: list[int] = []
    joined, recorded, live = _joined(opened)
    end = live[4].wall_time
    device = "sdb"
    alone, _ = joined.chart(device, end - 20.0, end)
    assert list(alone.walls) == [f.wall_time for f in live[:5]] and opened == []
    joined.frame_at(recorded[0].wall_time)  # a scrub past the ring's start opens them
    assert opened == [1]
    both, _ = joined.chart(device, end - 20.0, end)
    want = [f.wall_time for f in recorded if end - 20.0 < f.wall_time < live[0].wall_time]
    assert list(both.walls) == want + [f.wall_time for f in live[:5]]
    rates = recorded[10].rates[device]
    assert rates is not None
    assert both.figures["r_s"][want.index(recorded[10].wall_time)] == pytest.approx(rates.r_s)
    again, _ = joined.chart(device, end - 10.0, end)  # cut from the recorded part read
    assert list(again.walls) == [w for w in both.walls if w > end - 10.0]
