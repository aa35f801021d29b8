"""A replayed or scrubbed frame is judged against the same quiet baseline the live judge had:
the quiet awaits of the timeline's frames before it, not only of the five just before it, so a
saturation longer than five frames still reads ``saturated`` in a replay, as it did live."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record.collect import inventory_doc, recorded_sample
from iotop_plus.record.recorder import Recorder
from iotop_plus.record.store import FrameStore
from iotop_plus.record.timeline import open_timeline
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample, Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.widgets.device_panel import DevicePanel
from iotop_plus.why.diagnosis import Cause, Diagnosis
from iotop_plus.why.quiet_history import QuietHistory
from iotop_plus.why.verdicts import Judge, timeline_lookback, with_verdicts
from iotop_plus.why.verdicts import judge as judge_
from tests.tui.canned import HOST_ROOTS, START, CannedSampler
from tests.tui.helpers import parts_up, wait_for
from tests.tui.history_frames import fill
from tests.tui.test_verdict_sees_recent_frames import why_line

DEVICE = "nvme0n1"
FIRST = 1_790_000_000.0
"""Wall time of the first sample (the frames cross a wall-clock minute: two chunks)."""
QUIET = 10
"""Frames in which the device is quiet (200 IOPS at 1 ms, queue 0.2)."""
SATURATED = 20
"""Frames after them in which it is 100 % busy with a queue of 30 at 100 ms."""
AT = QUIET + 15
"""The frame judged: the 15th of the saturation (the first frame has no rates)."""


class QuietThenSaturated(CannedSampler):
    """The fixture's devices idle but ``DEVICE``, quiet and then saturated, a sample a second."""

    def __init__(self) -> None:
        super().__init__(HOST_ROOTS)
        self.values = list(self.state_a[DEVICE].values)

    def sample(self) -> Sample:
        k = self.calls
        self.calls += 1
        if k:
            ios, wait, busy = (200, 1, 200) if k <= QUIET else (300, 100, 1000)
            v = self.values
            v[0] += ios // 2  # reads, and their ms
            v[3] += ios // 2 * wait
            v[4] += ios // 2  # writes, and their ms
            v[7] += ios // 2 * wait
            v[9] += busy  # io_ticks
            v[10] += ios * wait  # time in queue: aqu-sz = ios x await / 1000
        counters = dict(self.state_a)
        a = counters[DEVICE]
        counters[DEVICE] = DiskCounters(a.major, a.minor, DEVICE, tuple(self.values), a.n_fields)
        return Sample(START + k, FIRST + k, MappingProxyType(counters))


def frames() -> list[Frame]:
    source = LiveSource(HOST_ROOTS, QuietThenSaturated())
    try:
        return [source.next_frame() for _ in range(QUIET + SATURATED + 1)]
    finally:
        source.close()


def judged_live(shown: list[Frame]) -> list[Frame]:
    judge = Judge()
    return [judge.judged(f, (DEVICE,)) for f in shown]


def first_cause(frame: Frame) -> Cause:
    verdict = (frame.verdicts or {}).get(DEVICE)
    assert isinstance(verdict, Diagnosis) and verdict.causes
    return verdict.causes[0]


def recording(tmp_path: Path, shown: list[Frame]) -> Timeline:
    inventory = inventory_doc(Sampler(HOST_ROOTS).inventory(), HOST_ROOTS, {})
    recorder = Recorder(tmp_path / "rec", lambda: {"host": "canned", "zone": "UTC", **inventory})
    try:
        for frame in shown:
            recorder.write(recorded_sample(frame, HOST_ROOTS, 0))
    finally:
        recorder.close()
    return open_timeline(tmp_path / "rec")


def test_live_the_15th_saturated_frame_is_saturated_against_the_quiet_before() -> None:
    live = first_cause(judged_live(frames())[AT])
    assert live.cause == "saturated" and live.evidence["quiet_await"] == 1.0


@pytest.mark.parametrize("kind", ["store", "recording"])
def test_a_looked_up_frame_gets_the_quiet_awaits_the_live_judge_had(
    tmp_path: Path, kind: str
) -> None:
    shown = frames()
    judge = Judge()
    live = [judge.judged(f, (DEVICE,)) for f in shown]
    timeline = fill(FrameStore(15, 1.0), shown) if kind == "store" else recording(tmp_path, shown)
    history = QuietHistory(timeline)
    # Every frame, from the last back (a scrub), then from the first on.
    for frame in [*shown[::-1], *shown]:
        looked_up = timeline.frame_at(frame.wall_time)
        assert looked_up is not None and looked_up.wall_time == frame.wall_time
        want = judge.lookback.quiet_before(frame.seq)(DEVICE)
        assert history.quiet_before(looked_up)(DEVICE) == pytest.approx(want)
    # Judged with it, the 15th saturated frame is saturated, as live; without it (only the
    # five frames before it) it is not.
    looked_up = timeline.frame_at(shown[AT].wall_time)
    assert looked_up is not None
    alone = timeline_lookback(looked_up, timeline)  # the five frames before it only
    assert alone.baseline(DEVICE) is None
    assert first_cause(with_verdicts(looked_up, judge_(looked_up, alone))).cause != "saturated"
    lookback = timeline_lookback(looked_up, timeline, None, history)
    assert lookback.baseline(DEVICE) == pytest.approx(1.0)
    replayed = first_cause(with_verdicts(looked_up, judge_(looked_up, lookback)))
    assert replayed.cause == "saturated" and replayed.evidence["quiet_await"] == 1.0
    assert first_cause(live[AT]).evidence["quiet_await"] == 1.0


@pytest.mark.parametrize("kind", ["store", "recording"])
async def test_the_replayed_15th_saturated_frame_says_saturated(tmp_path: Path, kind: str) -> None:
    shown = frames()
    timeline = fill(FrameStore(15, 1.0), shown) if kind == "store" else recording(tmp_path, shown)
    app = make_replay_app(HOST_ROOTS, timeline, shown[AT].wall_time)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.shown_frame is not None)
        await parts_up(pilot, app)
        frame = screen.shown_frame
        assert frame is not None and frame.wall_time == shown[AT].wall_time
        assert screen.selected_device == DEVICE
        panel = screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: why_line(panel).startswith("why: saturated"), "saturated")
        line = why_line(panel)
        assert "100x its quiet 1.00 ms" in line and "in 5 of the last 5 frames" in line


def test_a_frame_from_before_the_live_feed_is_judged_on_the_timeline_s_quiet(
    tmp_path: Path,
) -> None:
    """History older than the run (the recordings before the ring): the live judge never saw
    its frames, so their quiet baseline is the recording's, not the live frames' after them."""
    shown = frames()
    older = recording(tmp_path, shown[: AT + 1])
    live = Judge()
    for frame in shown[AT + 1 :]:  # the run began after the recording's frames
        live.judged(frame, (DEVICE,))
    old = older.frame_at(shown[AT].wall_time)
    assert old is not None and old.seq <= shown[-1].seq  # a place in the live sequence too
    assert not live.lookback.saw(old)
    assert live.lookback.saw(shown[-1])
    lookback = timeline_lookback(old, older, live.lookback, QuietHistory(older))
    assert lookback.baseline(DEVICE) == pytest.approx(1.0)
    # Without the timeline's quiet: only the five saturated frames before it, no baseline.
    assert timeline_lookback(old, older, live.lookback).baseline(DEVICE) is None
