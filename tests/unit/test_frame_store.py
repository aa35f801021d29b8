"""The frame store: frames kept as a recording's chunks in memory, found by wall time."""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType

import pytest

from iotop_plus.record import store as store_module
from iotop_plus.record.store import RECENT_KEPT, ClockMark, FrameStore
from iotop_plus.record.store_chunk import Chunk
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.timeline import METRICS
from tests.unit.store_frames import canned_frames


def _fill(store: FrameStore, frames: list[Frame]) -> FrameStore:
    for frame in frames:
        store.append(frame)
    store.wait_encoded()  # the closed chunks are encoded on a thread of their own
    return store


def _same(got: Frame | None, want: Frame) -> None:
    """The rebuilt frame is the appended one in its counters, times, sequence and rates."""
    assert got is not None
    assert (got.seq, got.wall_time, got.sample.monotonic) == (
        want.seq,
        want.wall_time,
        want.sample.monotonic,
    )
    assert got.sample.counters == want.sample.counters
    assert got.rates.keys() == want.rates.keys()
    for name, rates in want.rates.items():
        other = got.rates[name]
        assert (rates is None) == (other is None), name
        if rates is not None and other is not None:
            assert [getattr(other, m) for m in METRICS] == [getattr(rates, m) for m in METRICS]


def test_lookups_by_wall_time_rebuild_the_frames_from_the_chunks() -> None:
    frames = canned_frames(150)  # one a second: three wall-clock minutes, three chunks
    store = _fill(FrameStore(minutes=15, interval=1.0), frames)
    t0 = frames[0].wall_time
    assert len(store) == 150 and store.span() == (t0, t0 + 149)
    assert store.at(t0 + 3) is not frames[3]  # not kept as it came: rebuilt
    _same(store.at(t0 + 3), frames[3])
    _same(store.at(t0 + 3.7), frames[3])  # the last one before
    _same(store.at(t0 - 100), frames[0])  # earlier than all: the first
    assert store.at(t0 + 149) is frames[-1]  # the last few are kept as they came
    _same(store.step(t0 + 3, 1), frames[4])
    _same(store.step(t0 + 3, -50), frames[0])  # clamped
    assert [f.seq for f in store.window(t0 + 5, 3)] == [f.seq for f in frames[3:6]]
    assert [f.seq for f in store.between(t0 + 58, t0 + 61)] == [f.seq for f in frames[59:62]]
    for got, want in zip(store.frames(), frames, strict=True):
        _same(got, want)  # every frame, across chunk ends (rates from the chunk before)


def test_an_empty_store_answers_none() -> None:
    store = FrameStore()
    assert store.span() is None and store.at(1.0) is None and store.step(1.0, -1) is None
    assert store.window(1.0, 60) == [] and store.identity("sda") is None
    assert len(store.columns("sda", 0.0, 1.0).walls) == 0


def test_the_store_keeps_minutes_at_the_current_interval() -> None:
    frames = canned_frames(200)
    store = _fill(FrameStore(minutes=1, interval=1.0), frames)
    assert len(store) == 61
    assert store.span() == (frames[-61].wall_time, frames[-1].wall_time)
    _same(store.at(frames[-61].wall_time - 30), frames[-61])  # never a frame out of the window
    _same(store.frames()[0], frames[-61])  # its rates from the frame before, still kept
    assert len(store._chunks) <= 3  # the chunks out of the window went
    store.set_interval(5.0)
    assert len(store) == 13
    store.set_interval(0.25)
    assert store.capacity == store.max_capacity == 241


def test_a_clock_stepped_back_hides_the_future_and_leaves_a_mark() -> None:
    frames = canned_frames(100)
    store = _fill(FrameStore(minutes=15, interval=1.0), frames[:80])
    back = [  # the clock stepped back 50 s: these frames come after, monotonic time goes on
        dataclasses.replace(f, sample=dataclasses.replace(f.sample, wall_time=f.wall_time - 50))
        for f in frames[80:]
    ]
    _fill(store, back)
    assert store.marks == type(store.marks)([ClockMark(back[0].wall_time, 49.0)])
    t0 = frames[0].wall_time
    assert store.span() == (t0, back[-1].wall_time)
    assert len(store) == 30 + 20  # frames at or after the step's wall time are hidden
    _same(store.at(back[0].wall_time), back[0])
    _same(store.at(back[0].wall_time - 1), frames[29])
    seqs = [f.seq for f in store.frames()]
    assert seqs == sorted(seqs)  # ordered by sequence as by wall time


def test_columns_are_the_frames_figures_keyed_by_identity() -> None:
    frames = canned_frames(130)
    store = _fill(FrameStore(minutes=15, interval=1.0), frames)
    device = "sdb"
    cols = store.columns(device, frames[9].wall_time, frames[-1].wall_time)
    want = frames[10:]
    assert list(cols.walls) == [f.wall_time for f in want]
    for metric in METRICS:
        for value, frame in zip(cols.figures[metric], want, strict=True):
            rates = frame.rates[device]
            assert rates is not None
            assert math.isclose(value, getattr(rates, metric), rel_tol=1e-6, abs_tol=1e-6)
    # The name is another device from frame 100 on (a new diskseq): its series starts there.
    renamed = [
        dataclasses.replace(
            f,
            sample=dataclasses.replace(
                f.sample, identities=MappingProxyType({device: f"{device}#{2 if i else 1}"})
            ),
        )
        for i, f in ((i >= 100, f) for i, f in enumerate(frames))
    ]
    store = _fill(FrameStore(minutes=15, interval=1.0), renamed)
    assert store.identity(device) == f"{device}#2"
    assert store.identity(device, frames[50].wall_time) == f"{device}#1"
    cols = store.columns(device, 0.0, frames[-1].wall_time)
    assert list(cols.walls) == [f.wall_time for f in frames[100:]]
    old = store.columns(device, 0.0, frames[99].wall_time)
    assert list(old.walls) == [f.wall_time for f in frames[:100]]


def test_a_device_without_rates_is_a_gap_in_its_columns() -> None:
    frames = canned_frames(3)
    store = _fill(FrameStore(), frames)
    first = store.columns("sda", 0.0, frames[0].wall_time)
    assert len(first.walls) == 1 and math.isnan(first.figures["util"][0])  # no rates yet


def test_the_open_chunk_keeps_its_frames_as_they_came_until_it_is_encoded() -> None:
    frames = canned_frames(RECENT_KEPT + 5)
    store = _fill(FrameStore(), frames)
    assert len(store._chunks) == 1 and store._chunks[0].open
    assert all(got is want for got, want in zip(store.frames(), frames, strict=True))
    assert store._chunks[0].pieces is None  # nothing encoded while it is open
    last = frames[-1]
    again = dataclasses.replace(  # one more frame, at the same wall time: it replaces the last
        last, seq=99, sample=dataclasses.replace(last.sample, monotonic=last.sample.monotonic + 1)
    )
    store.append(again)
    assert [f.seq for f in store.frames()][-2:] == [frames[-2].seq, 99]
    assert store.marks == type(store.marks)()  # the same wall time is no step back


def test_bad_minutes_are_refused() -> None:
    for bad in (0, -1, math.nan, math.inf):
        with pytest.raises(ValueError, match="history minutes"):
            FrameStore(minutes=bad)


def test_a_closed_chunk_answers_from_its_frames_until_its_stream_is_ready() -> None:
    frames = canned_frames(130)  # three wall-clock minutes: two chunks closed
    store = FrameStore(minutes=15, interval=1.0)
    waiting: list[Chunk] = []
    store.coder.submit = waiting.append  # type: ignore[assignment]  # held, not encoded
    _fill(store, frames)
    assert len(waiting) == 2 and all(c.frames is not None and not c.open for c in waiting)
    assert all(got is want for got, want in zip(store.frames(), frames, strict=True))
    store.coder.encode(waiting[0])  # the first is encoded; the second is not yet
    assert waiting[0].frames is None and waiting[0].pieces
    for got, want in zip(store.frames(), frames, strict=True):
        _same(got, want)
    assert store.at(frames[3].wall_time) is not frames[3]  # rebuilt from the stream
    store.coder.encode(waiting[1])  # its first frame's rates need the first chunk's last
    _same(store.at(frames[60].wall_time), frames[60])
    assert store.coder.frames == sum(len(c) for c in waiting) and store.coder.seconds > 0


def test_a_chunk_closes_at_a_bound_of_device_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = canned_frames(30)  # within one wall-clock minute
    devices = len(frames[0].sample.counters)
    monkeypatch.setattr(store_module, "OPEN_CELLS", 7 * devices)
    store = _fill(FrameStore(minutes=15, interval=1.0), frames)
    assert [len(c) for c in store._chunks] == [7, 7, 7, 7, 2]
    for got, want in zip(store.frames(), frames, strict=True):
        _same(got, want)  # rates across each chunk's start
