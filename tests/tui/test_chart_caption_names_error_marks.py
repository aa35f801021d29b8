"""The charts' caption names every kind of mark they draw (#26 gap 5): I/O error events are
drawn as marks too, and the caption said only "marks: settings, probes, writeback"."""

from __future__ import annotations

import dataclasses

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.model import FrameEvent
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.widgets.charts import DeviceCharts
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, wait_for
from tests.tui.history_frames import fill, varying_frames

FIRST = 1_790_000_000.0


async def test_an_io_error_mark_is_drawn_and_named_in_the_caption() -> None:
    frames = varying_frames(30, FIRST)
    probe = make_replay_app(HOST_ROOTS, fill(FrameStore(5, 1.0), frames), frames[-1].wall_time)
    async with probe.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: probe.main_screen.selected_device is not None)
        device = probe.main_screen.selected_device
    assert device is not None
    text = f"2 I/O errors on {device} (2 since start)"
    frames[20] = dataclasses.replace(frames[20], events=(FrameEvent("io-error", text, device),))
    app = make_replay_app(HOST_ROOTS, fill(FrameStore(5, 1.0), frames), frames[-1].wall_time)
    async with app.run_test(size=(120, 36)) as pilot:
        await parts_up(pilot, app)
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: bool(charts.marks_drawn), "the error mark drawn")
        assert [m.label for m in charts.marks_drawn] == [text]
        caption = charts.caption
        assert caption.endswith("marks: settings, probes, writeback, errors")
