"""Replay: the same TUI on a Timeline (here a ring of canned frames), without a sampler."""

from __future__ import annotations

import argparse
import dataclasses
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from textual.widgets import Input, Static

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.model import FrameEvent
from iotop_plus.text import clock_text
from iotop_plus.tui.replay import make_replay_app, run_replay
from iotop_plus.tui.screens.jump import JumpScreen
from iotop_plus.tui.screens.refusals import REPLAY_REFUSAL
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.header import HostHeader
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, row_line, wait_for
from tests.tui.history_frames import fill, varying_frames
from tests.tui.test_history_scrub import shows_frame

KOLKATA = ZoneInfo("Asia/Kolkata")
FIRST = datetime(2026, 11, 23, 2, 40, tzinfo=KOLKATA).timestamp()


class Recording(FrameStore):
    """A timeline that also says which host it recorded, in which zone."""

    zone = KOLKATA

    def host_info(self) -> HostInfo:
        return HostInfo("db-replica-03", "6.1.0-18-amd64", None, True)


def recording(count: int = 600):
    frames = varying_frames(count, FIRST)
    # A setting change recorded at frame 300 and a probe at 320, on sdb.
    for k, event in (
        (300, FrameEvent("setting", "sdb read_ahead_kb 128→16", "sdb")),
        (320, FrameEvent("probe", "probe randread done", "sdb")),
    ):
        if k < count:
            frames[k] = dataclasses.replace(frames[k], events=(event,))
    return fill(Recording(minutes=60, interval=1.0), frames), frames


def header(app) -> str:
    return app.main_screen.query_one(HostHeader).text


async def test_replay_opens_at_the_time_given_and_scrubs_without_a_sampler() -> None:
    timeline, frames = recording()
    app = make_replay_app(HOST_ROOTS, timeline, frames[200].wall_time + 0.5)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[200])
        await parts_up(pilot, app)
        assert app.sampler_thread is None and app.frames_received == 0
        text = header(app)
        assert "db-replica-03" in text
        # In the recorded zone, with the date when it is not today's.
        assert f"REPLAY at {clock_text(frames[200].wall_time, KOLKATA, time.time())}" in text
        assert "IST UTC+05:30" in text  # the recorded zone differs from the viewer's (UTC)
        await pilot.press("right_square_bracket")
        assert app.main_screen.shown_frame == frames[201]
        assert shows_frame_in_zone(app, frames[201])
        await pilot.press("left_curly_bracket")
        assert app.main_screen.shown_frame == frames[141]
        await pilot.press("right_curly_bracket", "right_curly_bracket")
        assert app.main_screen.shown_frame == frames[261]
        await pilot.press("left_square_bracket")
        assert app.main_screen.shown_frame == frames[260]
        await pilot.press("l")  # the end of the recording
        assert app.main_screen.shown_frame == frames[-1]
        assert "REPLAY at" in header(app) and "LIVE" not in header(app)


def shows_frame_in_zone(app, frame) -> bool:
    from iotop_plus.text import table_figure as format_value
    from iotop_plus.tui.widgets.table_columns import column_scale
    from tests.tui.helpers import table

    shown = table(app).visible_names()
    top = max(frame.rates[n].r_s for n in shown if frame.rates.get(n) is not None)
    r_s = format_value(frame.rates["sdb"].r_s, column_scale(top))
    return r_s in row_line(app, "sdb").split() and clock_text(frame.wall_time, KOLKATA) in header(
        app
    )


async def test_replay_starts_at_the_first_frame_with_figures_by_default() -> None:
    """The very first recorded frame has no rates (nothing before it): a replay opened on it
    showed a table of dashes. It starts on the second."""
    timeline, frames = recording(30)
    app = make_replay_app(HOST_ROOTS, timeline, None)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[1])
        await parts_up(pilot, app)
        await pilot.press("right_square_bracket")
        assert shows_frame(app, frames[2]) or shows_frame_in_zone(app, frames[2])


async def test_g_reads_times_in_the_recorded_hosts_zone() -> None:
    timeline, frames = recording()
    app = make_replay_app(HOST_ROOTS, timeline, None)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[1])
        await parts_up(pilot, app)
        for text, index in (("02:45", 300), ("02:45:30", 330), ("21:15:10Z", 310)):
            await pilot.press("g")
            await wait_for(pilot, lambda: isinstance(app.screen, JumpScreen))
            hint = str(app.screen.query(Static)[1].render())
            assert "IST UTC+05:30" in hint
            app.screen.query_one("#jump-time", Input).value = text
            await pilot.press("enter")
            await wait_for(pilot, lambda: not isinstance(app.screen, JumpScreen))
            assert app.main_screen.shown_frame == frames[index], text


async def test_recorded_setting_and_probe_events_are_marked_on_the_charts() -> None:
    timeline, frames = recording()
    app = make_replay_app(HOST_ROOTS, timeline, frames[330].wall_time)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[330])
        await parts_up(pilot, app)
        app.main_screen.select_device("sdb")
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: charts.device == "sdb")
        labels = [m.label for m in charts.marks_drawn]
        assert labels == ["sdb read_ahead_kb 128→16", "probe randread done"]
        assert [m.timestamp for m in charts.marks_drawn] == [
            frames[300].wall_time,
            frames[320].wall_time,
        ]
        await pilot.press("left_curly_bracket")  # frame 270: both are after it
        await pilot.pause()
        assert charts.marks_drawn == []


async def test_replay_refuses_tuning_probes_and_experiments_with_the_reason() -> None:
    timeline, frames = recording(30)
    app = make_replay_app(HOST_ROOTS, timeline, None)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[1])
        await parts_up(pilot, app)
        screen = app.main_screen
        charts = screen.query_one(DeviceCharts)
        assert charts.device != "sdb"
        screen.select_device("sdb")
        # Once the selection has settled the charts are drawn for it, and in the same turn a
        # live screen would read the device's settings (the read this test says never comes).
        await wait_for(pilot, lambda: charts.device == "sdb", "the charts of sdb")
        for key in ("R", "S", "u", "U", "X"):
            await pilot.press(key)
            await pilot.pause()
        said = [n.message for n in app._notifications]
        assert said.count(REPLAY_REFUSAL) == 5, said
        assert not any(isinstance(s, JumpScreen) for s in app.screen_stack)
        assert screen.selection.reads == 0  # this host's sysfs is not the recorded device
        for tab in ("tab-tune", "tab-probe"):
            await screen.run_action(f"panel_tab('{tab}')")
            await screen.panels.ready(tab)
            await pilot.pause()
            shown = screen.query_one(f"#{tab}-refused", Static)
            assert str(shown.render()) == REPLAY_REFUSAL
        assert "SettingsPanel" not in {type(n).__name__ for n in screen.walk_children()}
        assert "ProbePanel" not in {type(n).__name__ for n in screen.walk_children()}
        assert "\n" not in REPLAY_REFUSAL


def test_an_empty_recording_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_replay(argparse.Namespace(), HOST_ROOTS, FrameStore(), None)
    assert code == 1
    err = capsys.readouterr().err
    assert err == "iotop-plus: replay: the recording holds no frames\n"
