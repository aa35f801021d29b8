"""The verdict is judged off the UI thread: live, the sampler thread judges each frame for
the device the Device tab shows and the frame carries it; a frame shown without it (another
device selected, scrubbed back, a replay) is judged on a worker thread. The UI thread never
calls the verdict engine: every call of it records its thread here."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from iotop_plus.config import Config
from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.tui.app import make_app
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.why_lines import JUDGING
from iotop_plus.tui.widgets.device_panel import DevicePanel
from iotop_plus.why import diagnosis, verdicts
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.tui.helpers import parts_up, started, step, wait_for
from tests.tui.history_frames import fill
from tests.tui.test_verdict_sees_recent_frames import DEVICE, saturating_frames, why_line


@pytest.fixture
def engine_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread of every call of the verdict engine (``diagnose`` asks it
    first what the frame has no figures for)."""
    threads: list[str] = []
    real = diagnosis.unchecked_causes

    def recorded(frame: Any) -> tuple[str, ...]:
        threads.append(threading.current_thread().name)
        return real(frame)

    monkeypatch.setattr(diagnosis, "unchecked_causes", recorded)
    return threads


@pytest.fixture
def lookback_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread of every read of a verdict's lookback from a timeline."""
    threads: list[str] = []
    real = verdicts.recent_frames

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(verdicts, "recent_frames", recorded)
    return threads


def judged(panel: DevicePanel) -> bool:
    line = why_line(panel)
    return line != "" and line != f"why: {JUDGING}"


@pytest.mark.usefixtures("step_clock")
async def test_live_frames_are_judged_on_the_sampler_thread(engine_threads: list[str]) -> None:
    sampler = CannedSampler(HOST_ROOTS)
    app = make_app(HOST_ROOTS, Config(interval=10.0), sampler=sampler, host=sampler.host_info())
    ui = threading.current_thread().name
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        panel = screen.query_one(DevicePanel)
        first = screen.selected_device
        assert first is not None
        await wait_for(pilot, lambda: judged(panel), "a verdict on screen")
        await step(pilot, app, 2)
        frame = screen.shown_frame
        assert frame is not None and frame.verdicts is not None
        assert set(frame.verdicts) == {first}  # the device shown, not every device
        # Another device: judged on a worker for the frame shown, then by the sampler.
        await pilot.press("down")
        await wait_for(pilot, lambda: screen.selected_device != first, "another device")
        other = screen.selected_device
        assert other is not None
        await wait_for(pilot, lambda: judged(panel), "the other device's verdict")
        await step(pilot, app, 1)
        frame = screen.shown_frame
        assert frame is not None and frame.verdicts is not None and other in frame.verdicts
        # Scrubbed back: the ring's frame is judged on a worker too.
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: judged(panel), "the scrubbed frame's verdict")
    assert engine_threads, "the verdict engine was never called"
    assert ui not in engine_threads, engine_threads
    assert "iotop-plus-replay-read" in engine_threads  # the worker
    assert any(t != "iotop-plus-replay-read" for t in engine_threads)  # the sampler


async def test_a_replay_is_judged_off_the_ui_thread(
    engine_threads: list[str], lookback_threads: list[str]
) -> None:
    frames = saturating_frames()
    timeline: Timeline = fill(FrameStore(minutes=5, interval=1.0), frames)
    app = make_replay_app(HOST_ROOTS, timeline, frames[-1].wall_time)
    ui = threading.current_thread().name
    async with app.run_test(size=(100, 36)) as pilot:
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.shown_frame == frames[-1])
        await parts_up(pilot, app)
        assert screen.selected_device == DEVICE
        panel = screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "in 5 of the last 5 frames" in why_line(panel))
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: "in 4 of the last 5 frames" in why_line(panel))
    assert engine_threads and ui not in engine_threads, engine_threads
    # The frames before the one shown are read from the recording off the UI thread too.
    assert lookback_threads and ui not in lookback_threads, lookback_threads


def test_one_judge_gives_serve_snapshot_and_the_tui_the_same_verdicts() -> None:
    from iotop_plus.commands.snapshot_diagnosis import Reports
    from iotop_plus.why.diagnosis import Diagnosis
    from iotop_plus.why.verdicts import Judge

    frames = saturating_frames()
    judge = Judge()
    reports = Reports()
    lines: list[Mapping[str, str]] = []
    for frame in frames:
        mine = judge.judged(frame).verdicts
        assert mine is not None
        theirs = reports.verdict(frame, DEVICE)
        verdict = mine[DEVICE]
        assert isinstance(verdict, Diagnosis)
        lines.append({"judge": verdict.line(), "snapshot": theirs.line()})
    assert all(x["judge"] == x["snapshot"] for x in lines), lines
    assert "in 5 of the last 5 frames" in lines[-1]["judge"]
