"""Scrubbing the TUI's own history: [ ] { } g l, the header in each mode, the frame shown."""

from __future__ import annotations

from datetime import datetime, timezone

from textual.widgets import Input

from iotop_plus.config import Config
from iotop_plus.sampling.store.timeline import Mark
from iotop_plus.text import clock_text
from iotop_plus.text import table_figure as format_value
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.keys import screen_clashes
from iotop_plus.tui.screens.help import help_text
from iotop_plus.tui.screens.jump import JumpScreen
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.key_hints import KeyHints
from iotop_plus.tui.widgets.table_columns import column_scale
from tests.tui.canned import canned_app
from tests.tui.helpers import row_line, started, table, wait_for
from tests.tui.history_frames import before_live, fill

EARLIER = 300
"""Frames in the ring before the app's first live frame."""


def app_with_history() -> tuple[IotopPlusApp, list]:
    # 10 s frames (few live ones during a test); an hour of them covers the canned 300 s.
    app = canned_app(Config(interval=10.0, history_minutes=60.0), with_history=False)
    frames = before_live(EARLIER)
    fill(app.store, frames)
    return app, frames


def header(app: IotopPlusApp) -> str:
    return app.main_screen.query_one(HostHeader).text


def shows_frame(app: IotopPlusApp, frame) -> bool:
    """The table's sdb row shows this frame's r/s, and the header its time."""
    # Formatted as the table does: one format per column, fitted to the column's largest.
    shown = table(app).visible_names()
    top = max(frame.rates[n].r_s for n in shown if frame.rates.get(n) is not None)
    r_s = format_value(frame.rates["sdb"].r_s, column_scale(top))
    return r_s in row_line(app, "sdb").split() and clock_text(frame.wall_time, None) in header(app)


async def test_stepping_back_and_forward_shows_each_frames_figures() -> None:
    app, frames = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        assert "LIVE" in header(app)
        live = app.latest_frame
        assert live is not None
        await pilot.press("left_square_bracket")
        shown = app.main_screen.shown_frame
        assert shown is not None and shown.wall_time == live.wall_time - 1
        assert app.main_screen.shown.paused and app.main_screen.scrubber.mode == "history"
        assert f"HISTORY at {clock_text(shown.wall_time, None)}" in header(app)
        for _ in range(5):
            await pilot.press("left_square_bracket")
        target = frames[EARLIER - 5]
        assert app.main_screen.shown_frame == target
        assert shows_frame(app, target)
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert app.main_screen.shown_frame == frames[EARLIER - 3]
        assert shows_frame(app, frames[EARLIER - 3])
        # Sampling goes on: new frames fill the ring, the screen stays on the scrubbed one.
        before = app.store.span()
        app.feed.thread.sample_now()  # type: ignore[union-attr]
        await wait_for(pilot, lambda: app.store.span() != before)
        assert app.main_screen.shown_frame == frames[EARLIER - 3]
        assert "HISTORY at" in header(app)


async def test_minute_jumps() -> None:
    app, frames = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        # Two back from live (the app's two live frames): the last canned one.
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert app.main_screen.shown_frame == frames[-1]
        await pilot.press("left_curly_bracket")
        assert app.main_screen.shown_frame == frames[-61]
        await pilot.press("left_curly_bracket", "left_curly_bracket")
        assert app.main_screen.shown_frame == frames[-181]
        assert shows_frame(app, frames[-181])
        await pilot.press("right_curly_bracket")
        assert app.main_screen.shown_frame == frames[-121]
        for _ in range(10):  # clamped at the oldest frame kept
            await pilot.press("left_curly_bracket")
        assert app.main_screen.shown_frame == frames[0]


async def jump(pilot, app: IotopPlusApp, text: str) -> None:
    await pilot.press("g")
    await wait_for(pilot, lambda: isinstance(app.screen, JumpScreen))
    box = app.screen.query_one("#jump-time", Input)
    box.value = text
    await pilot.press("enter")


async def test_g_goes_to_a_time_in_each_form() -> None:
    app, frames = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        target = frames[100]
        local = datetime.fromtimestamp(target.wall_time).astimezone()
        utc = datetime.fromtimestamp(target.wall_time, timezone.utc)
        forms = [
            local.strftime("%H:%M:%S"),
            local.strftime("%Y-%m-%dT%H:%M:%S"),
            utc.strftime("%H:%M:%S+00:00"),
            utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
        ]
        newest = app.store.span()[1]  # type: ignore[index]
        forms.append(f"{newest - target.wall_time:.0f}s ago")  # counted from the newest frame
        for text in forms:
            await jump(pilot, app, text)
            await wait_for(pilot, lambda: not isinstance(app.screen, JumpScreen))
            assert app.main_screen.shown_frame == target, text
            assert shows_frame(app, target)
            await pilot.press("l")
        await jump(pilot, app, "4m ago")  # minutes, from the newest frame kept
        shown = app.main_screen.shown_frame
        assert shown is not None and newest - 241 < shown.wall_time <= newest - 240


async def test_a_bad_time_is_one_line_and_the_dialog_stays() -> None:
    app, _ = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await jump(pilot, app, "half past nine")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, JumpScreen)
        assert dialog.error.startswith("cannot read 'half past nine' as a time; use 14:05")
        assert "\n" not in dialog.error
        assert app.main_screen.scrubber.mode == "live"  # nothing moved
        await pilot.press("escape")
        assert not isinstance(app.screen, JumpScreen)


async def test_l_returns_to_live_and_space_pauses_then_scrubs_from_there() -> None:
    app, _ = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        hints = app.main_screen.query_one(KeyHints)
        assert " l Live " not in str(hints.render())  # offered only away from live
        await pilot.press("space")
        paused_on = app.main_screen.shown_frame
        assert paused_on is not None
        assert f"PAUSED at {clock_text(paused_on.wall_time, None)}" in header(app)
        await pilot.pause()
        assert " l Live " in str(hints.render())
        await pilot.press("left_square_bracket")  # from the paused frame, not the newest
        assert app.main_screen.shown_frame == app.store.step(paused_on.wall_time, -1)
        assert "HISTORY at" in header(app)
        await pilot.press("l")
        scrub = app.main_screen.scrubber
        assert not app.main_screen.shown.paused and scrub.mode == "live" and scrub.at is None
        assert app.main_screen.shown_frame == app.latest_frame  # (with its verdict judged)
        assert "LIVE" in header(app) and "HISTORY" not in header(app)
        # space in history also goes back to live
        await pilot.press("left_curly_bracket", "space")
        assert app.main_screen.scrubber.mode == "live" and "LIVE" in header(app)


async def test_charts_show_the_window_ending_at_the_frame_and_its_marks() -> None:
    app, frames = app_with_history()
    # A setting change made during the run, 30 s before the frame we scrub to (and within
    # the live charts' canned history).
    marked = frames[250]
    app.store.mark(Mark(marked.wall_time, "read_ahead_kb 128→16", "sdb"))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        app.main_screen.select_device("sdb")
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: bool(charts.marks_drawn), "the mark drawn")
        assert [m.label for m in charts.marks_drawn] == ["read_ahead_kb 128→16"]  # live
        await jump(pilot, app, clock_text(frames[280].wall_time, None))
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[280])
        await pilot.pause()
        assert [m.label for m in charts.marks_drawn] == ["read_ahead_kb 128→16"]
        assert charts.marks_drawn[0].timestamp == marked.wall_time  # on the wall clock
        caption = charts.caption
        assert f"seconds before {clock_text(frames[280].wall_time, None)}" in caption
        assert "280 samples" in caption  # frames 0..280; the first has no rates
        # Before the change: no mark in that window.
        await jump(pilot, app, clock_text(frames[240].wall_time, None))
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[240])
        await pilot.pause()
        assert charts.marks_drawn == []


async def test_the_ring_follows_history_minutes_and_the_interval() -> None:
    app = canned_app(Config(interval=10.0, history_minutes=2.0), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        assert app.store.capacity == 13  # 2 minutes at 10 s, both ends
        await pilot.press("minus")  # still 10 s (the slowest)
        await pilot.press("plus")
        await pilot.pause()
        assert app.store.capacity == 2 * 60 // 5 + 1
        fill(app.store, before_live(0))
        assert app.store.max_capacity == 481


async def test_history_keys_are_in_help_palette_hints_and_clash_free() -> None:
    app, _ = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        for tab in ("tab-tune", "tab-processes", "tab-probe"):
            await screen.panels.ready(tab)
        assert screen_clashes(screen) == []
        text = help_text()
        assert "[ / ]" in text and "{ / }" in text and "go to a time" in text
        titles = {title for title, _help, _action in screen.commands()}
        assert {"History: one sample back", "History: go to a time", "Back to live"} <= titles
        hints = str(screen.query_one(KeyHints).render())
        assert " [ Back " in hints and " g Go to " in hints
