"""The user's story on a captured host: what the table shows and what every key does."""

from __future__ import annotations

import asyncio
import math

from textual.widgets import Input

from iotop_plus.config import Config
from iotop_plus.sampling.store.timeline import Mark
from iotop_plus.tui.engine.testing import after_close_all
from iotop_plus.tui.screens.help import HelpScreen
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.device_panel import DevicePanel
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.table_columns import BAD, NOT_SATURATION_MARK, WARN
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import burst, row_line, started, step, table, table_lines, wait_for


def header_text(app) -> str:
    return app.main_screen.query_one(HostHeader).text


async def test_default_view_shows_used_whole_disks_with_iostat_figures() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        names = table(app).visible_names()
        # Used whole devices only: no partitions, no loop, no never-used sdc.
        assert sorted(names) == ["dm-0", "nvme0n1", "sda", "sdb"]
        lines = table_lines(app)
        assert lines[0].split()[:4] == ["Device▲", "r/s", "w/s", "rkB/s"]
        assert "%util" in lines[0]
        assert "IO/s" in lines[1] and "ms" in lines[1]
        # nvme0n1 does 5200 reads and 2100 writes per canned second.
        nvme = row_line(app, "nvme0n1").split()
        assert nvme[:3] == ["nvme0n1", "5200.00", "2100.00"]
        # dm devices show their dm name and what they sit on.
        assert row_line(app, "dm-0").startswith("vg0-data←sda2")
        header = header_text(app)
        for part in ("db-primary-07", "6.1.0-18-amd64", "up 4d 03:02", "every 10s", "LIVE"):
            assert part in header
        assert "root" in header


async def test_trouble_is_coloured_and_ssd_util_is_marked() -> None:
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        t = table(app)
        rows = {r.name: r for r in t.rows}
        keys = [c.key for c in t.columns]

        def cell(name: str, key: str):
            _, cells = t._row_content(rows[name], False)
            return cells[1 + keys.index(key)]

        # sdb: spinning, 93 ms reads, aqu-sz 60 of nr_requests 64, 100 %util: all red.
        for key in ("r_await", "aqu_sz", "util"):
            text, style = cell("sdb", key)
            assert style.color is not None and style.color == BAD.color, (key, text)
        # nvme0n1: 0.17 ms is fine; its %util carries the "not saturation" mark, dimmed.
        text, style = cell("nvme0n1", "r_await")
        assert style.color is None
        text, style = cell("nvme0n1", "util")
        assert text.endswith(NOT_SATURATION_MARK) and style.dim
        assert NOT_SATURATION_MARK in row_line(app, "nvme0n1")
        # sda (spinning) at 30 ms writes: high for a disk, not bad.
        text, style = cell("sda", "w_await")
        assert style.color is not None and style.color == WARN.color


async def test_a_shows_all_devices_with_partitions_folded_under_their_disk() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("a")
        names = table(app).visible_names()
        assert {"loop0", "sdc", "sda1", "sda2", "nvme0n1p1"} <= set(names)
        assert names.index("sda1") == names.index("sda") + 1
        assert names.index("sda2") == names.index("sda") + 2
        assert row_line(app, "sda1").startswith("  └sda1")
        await pilot.press("a")
        assert "sda1" not in table(app).visible_names()


async def test_sort_keys_move_the_sort_column_and_r_reverses() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("greater_than_sign")  # sort by r/s, busiest first
        assert table(app).sort_title == "r/s"
        assert table(app).visible_names()[0] == "nvme0n1"
        assert "r/s▼" in table_lines(app)[0]
        await pilot.press("r")
        assert table(app).visible_names()[-1] == "nvme0n1"
        await pilot.press("r", "less_than_sign")
        assert table(app).sort_title == "Device"
        assert table(app).visible_names() == ["dm-0", "nvme0n1", "sda", "sdb"]
        await pilot.press("less_than_sign")  # wraps to the last column
        assert table(app).sort_title == table(app).columns[-1].title


async def test_slash_filters_by_name_and_escape_clears() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("slash", "n", "v", "m")
        assert table(app).visible_names() == ["nvme0n1", "nvme0n1p1"]
        await pilot.press("enter")
        assert table(app).has_focus
        assert table(app).visible_names() == ["nvme0n1", "nvme0n1p1"]
        await pilot.press("slash", "ctrl+a")  # the filter also matches dm names
        app.main_screen.query_one("#filter", Input).value = "vg0"
        await pilot.pause()
        assert table(app).visible_names() == ["dm-0"]
        await pilot.press("enter", "escape")
        assert sorted(table(app).visible_names()) == ["dm-0", "nvme0n1", "sda", "sdb"]


async def test_a_name_typed_in_one_burst_after_slash_all_lands_in_the_filter() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        shown = table(app).visible_names()
        # "s", "d" and "a" are also table keys ("a" shows all devices): none may leak there.
        await burst(pilot, "slash", "s", "d", "a")
        assert app.main_screen.query_one("#filter", Input).value == "sda"
        assert table(app).visible_names() == ["sda", "sda1", "sda2"]
        await burst(pilot, "escape")
        assert table(app).visible_names() == shown


async def test_a_key_typed_right_after_the_filters_enter_does_not_leak_into_the_filter() -> None:
    """#17 item 7: "/name Enter followed quickly by a key types that key into the filter"."""
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await burst(pilot, "slash", "s", "d", "enter", "a")
        assert app.main_screen.query_one("#filter", Input).value == "sd"
        assert table(app).has_focus
        assert table(app).show_all  # the "a" after Enter reached the table's key


async def test_slash_is_text_in_a_focused_text_box() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("P")  # the Probe tab: its target box takes a path
        await wait_for(pilot, lambda: bool(app.main_screen.query("#probe-target")))
        target = app.main_screen.query_one("#probe-target", Input)
        target.focus()
        await pilot.pause()
        await burst(pilot, "slash", "t", "m", "p")
        assert target.value == "/tmp"
        assert not app.main_screen.query("#filter")  # never opened: not even mounted


async def test_c_cycles_basic_and_extended_columns() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        assert "rrqm/s" not in table_lines(app)[0]
        await pilot.press("c")
        assert table(app).column_set == "extended"
        header = table_lines(app)[0]
        assert "rrqm/s" in header and "r_await" in header and "w_await" in header
        await pilot.press("c")  # the latency set (#14) comes after extended
        assert table(app).column_set == "latency"
        await pilot.press("c")
        assert table(app).column_set == "basic"
    # Wide enough, extended shows every iostat -x column plus in-flight (the side panel
    # takes its 76 columns from 200 on, so "wide enough" is 280).
    app = canned_app(Config(interval=10.0, column_set="extended"))
    async with app.run_test(size=(280, 40)) as pilot:
        await started(pilot, app)
        header = table_lines(app)[0]
        for title in ("d_await", "f_await", "%drqm", "inflight", "%util"):
            assert title in header


async def test_space_freezes_the_display_while_sampling_continues(step_clock: StepClock) -> None:
    app = canned_app(Config(interval=0.25))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("space")
        assert "PAUSED" in header_text(app)
        frozen = app.main_screen.shown_frame

        def sda_points() -> int:
            return len(app.store.columns("sda", 0.0, math.inf).with_rates())

        history_before = sda_points()
        await step(pilot, app, 3)
        assert app.main_screen.shown_frame is frozen
        assert sda_points() == history_before + 3
        await pilot.press("space")
        assert "LIVE" in header_text(app)
        assert app.main_screen.shown_frame is not frozen


async def test_plus_and_minus_change_the_interval_within_limits() -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("plus")
        assert app.main_screen.interval == 0.5 and "every 0.5s" in header_text(app)
        await pilot.press("plus", "plus", "plus")
        assert app.main_screen.interval == 0.25
        await pilot.press("minus")
        assert app.main_screen.interval == 0.5
        for _ in range(8):
            await pilot.press("minus")
        assert app.main_screen.interval == 10.0 and "every 10s" in header_text(app)


async def test_question_mark_opens_help_with_a_line_per_column() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for column in ("r_await", "aqu-sz", "%util", "rareq-sz", "f_await"):
            assert column in text
        assert "SSD, NVMe" in text and "nr_requests" in text and "queue" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_cursor_keys_select_a_device_and_the_panel_follows() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        # The busiest device starts selected (the ruling "The starting device"), not dm-0.
        assert screen.selected_device == "nvme0n1"
        await pilot.press("home")
        assert screen.selected_device == "dm-0"
        await pilot.press("down")
        assert screen.selected_device == "nvme0n1"
        panel = screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "nr_requests: 1023 requests" in panel.text)
        assert "Samsung SSD 980 1TB" in panel.text
        assert "read_ahead_kb: 128 KiB (256 sectors)" in panel.text
        assert "scheduler: none" in panel.text
        assert "partitions: nvme0n1p1" in panel.text
        await pilot.press("end")
        assert screen.selected_device == "sdb"
        await pilot.press("home")
        assert screen.selected_device == "dm-0"
        await pilot.press("pagedown")
        assert screen.selected_device == "sdb"
        await pilot.press("pageup")
        assert screen.selected_device == "dm-0"
        await wait_for(pilot, lambda: "slaves: sda2" in panel.text)
        assert "mounts: /data (xfs)" in panel.text


async def test_charts_draw_the_selected_device_and_setting_marks() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: charts.device == "nvme0n1")  # the busiest starts
        app.store.mark(Mark(1_700_000_000.0 - 60.0, "ra→16", "sdb"))  # a minute before
        await pilot.press("end")
        await wait_for(pilot, lambda: charts.device == "sdb")
        drawn = "\n".join(charts.chart_text("chart-iops"))
        assert "ra→16" in drawn
        assert "IOPS" in drawn


async def test_narrow_terminal_shows_table_charts_and_panel_as_tabs() -> None:
    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        assert screen.layout_views.narrow
        assert screen.query_one("#view-tabs").display
        assert not screen.query_one("#side-panel").display
        # Every basic column fits in 80 columns.
        assert [c.title for c in table(app).columns] == [
            "r/s",
            "w/s",
            "rkB/s",
            "wkB/s",
            "r_await",
            "w_await",
            "aqu-sz",
            "%util",
        ]
        await pilot.press("2")
        assert screen.query_one("#charts").display and not table(app).display
        await pilot.press("3")
        assert screen.query_one("#side-panel").display
        assert not screen.query_one("#left").display
        await pilot.press("1")
        assert table(app).display and table(app).has_focus
        await pilot.press("down")  # from the busiest, nvme0n1, which starts selected
        assert screen.selected_device == "sda"


async def test_every_action_is_in_the_command_palette() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in (
            "Pause / resume",
            "Faster refresh",
            "Filter devices",
            "All devices",
            "Column set",
            "Sort by next column",
            "Reverse sort",
            "Help",
            "Quit",
        ):
            assert title in commands
        await commands["Pause / resume"].callback()
        assert app.main_screen.shown.paused
        await pilot.press("ctrl+p")
        await pilot.press(*"column set")
        await pilot.press("enter")
        await wait_for(pilot, lambda: table(app).column_set == "extended")


async def test_q_and_ctrl_c_quit() -> None:
    for key in ("q", "ctrl+c"):
        app = canned_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await started(pilot, app)
            await pilot.press(key)
            await pilot.pause()
        assert app.return_code == 0
        assert app.sampler_thread is None or not app.sampler_thread.is_alive()


async def test_a_tick_still_queued_when_the_app_exits_is_dropped() -> None:
    # The sampler thread can hand a tick over just as the app shuts down; CI once saw it
    # handled after the screens were gone (NoMatches for the header). It must be dropped
    # quietly.
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        tick = app.latest_frame
        assert tick is not None
        # Textual removes the screens, then handles what is left in the app's queue.
        # Queued on the event loop, as the sampler thread hands frames over.
        after_close_all(app, lambda: asyncio.get_running_loop().call_soon(app.feed.take, tick))
    assert app.return_code in (0, None)
