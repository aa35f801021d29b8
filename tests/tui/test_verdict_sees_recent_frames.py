"""The TUI's verdict sees the frames before the one shown: "saturated" needs the device's
earlier frames and its quiet baseline, which the Device tab takes from the screen's timeline
(the ring live, the recording in a replay); it lists every cause, with no "+N"."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.memory.dirty import Memory
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.widgets.device_panel import DevicePanel, fact_lines
from iotop_plus.why.verdicts import recent_frames
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, wait_for
from tests.tui.history_frames import fill, varying_frames
from tests.unit.test_verdict_line import psi, rates

FIRST = 1_790_000_000.0
DEVICE = "nvme0n1"


QUIET_FRAMES = 4
"""Frames in which the device is quiet (aqu-sz 0.2, await 1 ms) before it saturates."""


def saturating_frames() -> list[Frame]:
    """Four quiet frames, then five in which the device is 100 % busy with a queue of 30 at
    100 ms (its only rates: it is the busiest, so it starts selected), dirty memory over the
    background threshold while it writes, and CPU pressure at 97 %."""
    frames = varying_frames(QUIET_FRAMES + 5, FIRST)
    storm = Memory(300000, 20000, 400000, 200000)
    out = []
    for k, frame in enumerate(frames):
        if k < QUIET_FRAMES:
            r = rates(reads=100, writes=100, await_ms=1.0, busy_ms=200)
        else:
            r = rates(reads=150, writes=150, await_ms=100.0, busy_ms=1000)
        out.append(
            dataclasses.replace(
                frame,
                rates=MappingProxyType({DEVICE: r}),
                parts={"memory": storm},
                pressure=psi(cpu_some=97.0),
            )
        )
    return out


def why_line(panel: DevicePanel) -> str:
    return next((ln for ln in panel.text.splitlines() if ln.startswith("why: ")), "")


async def test_the_device_tab_says_saturated_in_4_of_5_frames_and_lists_every_cause() -> None:
    frames = saturating_frames()
    timeline: Timeline = fill(FrameStore(minutes=5, interval=1.0), frames)
    app = make_replay_app(HOST_ROOTS, timeline, frames[-1].wall_time)
    async with app.run_test(size=(100, 36)) as pilot:
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.shown_frame == frames[-1])
        await parts_up(pilot, app)
        assert screen.selected_device == DEVICE
        panel = screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: why_line(panel) != "")
        line = why_line(panel)
        assert line.startswith("why: saturated: 100 % busy, queue 30.0, await 100.0 ms")
        assert "in 5 of the last 5 frames" in line
        # Every cause, each qualified by the CPU pressure, and none cut to "+N".
        assert " · writeback storm: dirty 292 MB" in line and "+1" not in line
        assert line.count("(CPU pressure 97 % may inflate await)") == 2
        assert "CPU pressure 97 %: tasks wait" not in line
        # Wrapped beside its label at 80 columns: the last cause on the why's last row.
        lines = fact_lines([("why", line.removeprefix("why: "))], 80, app.console)
        assert len(lines) > 2 and lines[-1][1].rstrip().endswith("[medium]")
        # Scrubbed back, the verdict looks back on the frames before the one shown.
        await pilot.press("left_square_bracket")
        assert screen.shown_frame == frames[-2]
        await wait_for(pilot, lambda: "in 4 of the last 5 frames" in why_line(panel))
        await pilot.press("left_square_bracket")  # 3 of 5: not saturated
        await wait_for(pilot, lambda: why_line(panel).startswith("why: writeback storm"))


def test_recent_frames_are_the_frames_before_the_one_shown_oldest_first() -> None:
    frames = saturating_frames()
    timeline = fill(FrameStore(minutes=5, interval=1.0), frames)
    got = recent_frames(frames[-1], timeline)
    assert [f.rates[DEVICE] for f in got] == [f.rates[DEVICE] for f in frames[-6:-1]]
    assert recent_frames(frames[0], timeline) == []
    assert recent_frames(frames[-1], None) == []
