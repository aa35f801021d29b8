"""The TUI's verdict sees the frames before the one shown (#24 gap 3): "saturated" with
"await rising with depth" (medium) needs the device's earlier rates, which only ``snapshot``
passed; the Device tab now takes them from the screen's timeline (the ring live, the
recording in a replay)."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from iotop_plus.sampling.frame import Frame
from iotop_plus.sampling.ring_timeline import RingTimeline, fill
from iotop_plus.sampling.timeline import Timeline
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.why_lines import recent_rates
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, wait_for
from tests.tui.history_frames import varying_frames
from tests.unit.test_verdict_line import rates

FIRST = 1_790_000_000.0
DEVICE = "nvme0n1"


def rising_frames() -> list[Frame]:
    """Six frames in which the device is 95 % busy while its queue and await grow 1.0 → 2.0
    ms and 0.2 → 0.6 (its only rates: it is the busiest, so it starts selected)."""
    frames = varying_frames(6, FIRST)
    out = []
    for k, frame in enumerate(frames):
        await_ms = 1.0 + 0.2 * k
        queue_ms = round(200 * (1 + 0.4 * k))
        r = rates(reads=100, await_ms=await_ms, busy_ms=950, queue_ms=queue_ms)
        out.append(dataclasses.replace(frame, rates=MappingProxyType({DEVICE: r})))
    return out


def why_line(panel: DevicePanel) -> str:
    return next((ln for ln in panel.text.splitlines() if ln.startswith("why: ")), "")


async def test_the_device_tab_says_saturated_when_await_rises_with_depth() -> None:
    frames = rising_frames()
    timeline: Timeline = fill(RingTimeline(minutes=5, interval=1.0), frames)
    app = make_replay_app(HOST_ROOTS, timeline, frames[-1].wall_time)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.shown_frame == frames[-1])
        await parts_up(pilot, app)
        assert screen.selected_device == DEVICE
        panel = screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: why_line(panel) != "")
        assert why_line(panel).startswith(
            "why: saturated: 95 % busy, await 1.0→2.0 ms as the queue grew 0.2→0.6 [medium]"
        )
        # Scrubbed back, the verdict compares with the frames before the one shown.
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert screen.shown_frame == frames[3]
        await wait_for(
            pilot, lambda: "await 1.0→1.6 ms as the queue grew 0.2→0.4" in why_line(panel)
        )
        await pilot.press("left_square_bracket")  # await 1.4: not yet risen by half
        await wait_for(pilot, lambda: why_line(panel).startswith("why: no clear cause"))


def test_recent_rates_are_the_frames_before_the_one_shown_oldest_first() -> None:
    frames = rising_frames()
    timeline = fill(RingTimeline(minutes=5, interval=1.0), frames)
    got = recent_rates(DEVICE, frames[-1], timeline)
    assert got == [f.rates[DEVICE] for f in frames[:-1]]
    assert recent_rates(DEVICE, frames[0], timeline) == []
    assert recent_rates(DEVICE, frames[-1], None) == []
