"""#22 item 2: "/name Enter typed quickly (or pasted) selects the wrong device", and R, S, d
and X then act on it.

The ruling "Enter in the filter": Enter first applies the box's text, then selects the exact
name, else the first match in the current sort order; when nothing matches nothing is
selected and R, S, d and X say "no device selected". The cursor follows the selected name
across re-filtering and re-sorting, never a row index; a selection the filter hid comes back
when the filter is cleared. (The real console script in tmux: tests/e2e/test_filter_enter_tmux.py.)
"""

from __future__ import annotations

from textual.widgets import Input, Static

from iotop_plus.tui.app import IotopPlusApp
from tests.tui.canned import canned_app
from tests.tui.helpers import burst, started, table, wait_for


def said(app: IotopPlusApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


def cursor_row(app: IotopPlusApp) -> str | None:
    t = table(app)
    return t.rows[t.cursor].name if 0 <= t.cursor < len(t.rows) else None


async def test_slash_name_enter_in_one_burst_selects_that_name_not_the_old_row_index() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("end")  # the cursor on the last row: the index the old code kept
        assert table(app).selected == "sdb"
        # "sda" matches sda, sda1 and sda2; typed in one go with Enter.
        await burst(pilot, "slash", "s", "d", "a", "enter")
        await wait_for(pilot, lambda: app.main_screen.query_one("#filter", Input).value == "sda")
        assert table(app).visible_names() == ["sda", "sda1", "sda2"]
        assert table(app).selected == "sda" and cursor_row(app) == "sda"
        assert app.main_screen.selected_device == "sda"
        assert table(app).has_focus


async def test_enter_on_a_partial_name_selects_the_first_match_in_the_sort_order() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("home")  # dm-0
        await pilot.press("greater_than_sign")  # sort by r/s, busiest first
        assert table(app).selected == "dm-0"  # re-sorting keeps the name under the cursor
        assert cursor_row(app) == "dm-0"
        await burst(pilot, "slash", "s", "d", "enter")
        await pilot.pause()
        names = table(app).visible_names()
        assert set(names) >= {"sda", "sdb"} and names[0] != "sda", names  # sorted by r/s
        assert table(app).selected == names[0] and cursor_row(app) == names[0]
        assert app.main_screen.selected_device == names[0]


async def test_a_key_right_after_enter_acts_on_the_device_enter_picked() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("end")
        await pilot.press("up")  # sda: two rows above where Enter will land
        # R (read-ahead) in the same burst: it must open the Tune tab on sdb, not sda.
        await burst(pilot, "slash", "s", "d", "b", "enter", "R")
        screen = app.main_screen
        await wait_for(pilot, lambda: "tab-tune" in screen.panels.built)
        panel = screen.panels.settings_panel
        await wait_for(pilot, lambda: panel.is_mounted and panel.device is not None)
        assert panel.device == "sdb"
        assert screen.selected_device == "sdb"


async def test_a_filter_that_matches_nothing_selects_nothing_and_the_device_keys_say_so() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("end")  # sdb
        await burst(pilot, "slash", "z", "z", "z", "enter")
        await pilot.pause()
        screen = app.main_screen
        assert table(app).visible_names() == []
        assert table(app).selected is None and screen.selected_device is None
        await pilot.press("R")
        await wait_for(pilot, lambda: "no device selected" in said(app))
        assert "tab-tune" not in screen.panels.built or screen.panels.settings_panel.device is None
        app._notifications.clear()
        await pilot.press("S")
        await wait_for(pilot, lambda: "no device selected" in said(app))
        app._notifications.clear()
        await pilot.press("X")
        await wait_for(pilot, lambda: "no device selected" in said(app))
        await pilot.press("P")  # the Probe tab: d targets the selected device
        await wait_for(pilot, lambda: screen.panels.probe_panel.is_mounted)
        await pilot.press("d")
        error = screen.panels.probe_panel.query_one("#probe-error", Static)
        await wait_for(pilot, lambda: "no device selected" in str(error.render()))
        assert screen.panels.probe_panel.query_one("#probe-target", Input).value == ""
        # Clearing the filter brings back the device the filter hid.
        await pilot.press("slash", "escape")
        await wait_for(pilot, lambda: table(app).selected == "sdb")
        assert screen.selected_device == "sdb" and cursor_row(app) == "sdb"


async def test_the_cursor_follows_the_name_and_a_selection_the_filter_hid_comes_back() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("end")  # sdb, the last row by name
        await pilot.press("greater_than_sign")  # by r/s: sdb moves, the cursor with it
        assert table(app).selected == "sdb" and cursor_row(app) == "sdb"
        await pilot.press("r")
        assert table(app).selected == "sdb" and cursor_row(app) == "sdb"
        # Typing a filter that hides sdb: the first match is under the cursor meanwhile.
        await pilot.press("slash", "n", "v", "m")
        assert table(app).visible_names()[0] == "nvme0n1"
        assert cursor_row(app) == "nvme0n1"
        await pilot.press("escape")  # cleared without Enter: sdb comes back
        await wait_for(pilot, lambda: table(app).selected == "sdb")
        assert cursor_row(app) == "sdb" and app.main_screen.selected_device == "sdb"
        # The same when a filter hides it and then shows it again while typing on.
        await pilot.press("slash", "n", "backspace")
        await wait_for(pilot, lambda: table(app).selected == "sdb")
        assert cursor_row(app) == "sdb"


async def test_a_key_right_after_a_cursor_move_acts_on_the_device_under_the_cursor() -> None:
    """The table reports a move by message; R in the same burst must not overtake it."""
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("end", "up")  # sda
        assert app.main_screen.selected_device == "sda"
        await burst(pilot, "down", "R")
        screen = app.main_screen
        await wait_for(pilot, lambda: "tab-tune" in screen.panels.built)
        panel = screen.panels.settings_panel
        await wait_for(pilot, lambda: panel.is_mounted and panel.device is not None)
        assert table(app).selected == "sdb"
        assert panel.device == "sdb"


async def test_slash_on_an_80x24_screen_types_the_name_into_the_filter_not_the_table() -> None:
    # Narrow mode: "/" shows the table view, whose deferred focus() landed after the filter
    # box took focus, so "sdb" went to the table's keys (d: probe, b: ...) and the box stayed
    # empty (seen in tmux at 80x24, where an SRE over SSH works).
    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await pilot.press("slash")
        await pilot.pause()
        await burst(pilot, "s", "d", "b")
        await wait_for(pilot, lambda: app.main_screen.query_one("#filter", Input).value == "sdb")
        await pilot.press("enter")
        await wait_for(pilot, lambda: table(app).selected == "sdb")
        assert table(app).visible_names() == ["sdb"]


async def test_keys_on_the_charts_view_after_a_filter_are_not_typed_into_the_filter() -> None:
    # Narrow mode: with a filter kept, "2" hid the table; focus fell to the still shown filter
    # box, so "q" was typed into it (the filter became "sdbq", nothing matched) and never quit.
    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await pilot.press("slash", "s", "d", "b", "enter")
        await wait_for(pilot, lambda: table(app).selected == "sdb")
        await pilot.press("2")
        # Sent, not pressed: pilot.press then waits for the screen to handle the key, and a
        # screen torn down by the quit could keep it waiting its 30 s (2 hangs in 40 runs).
        await burst(pilot, "q")
        await wait_for(pilot, lambda: app.return_code is not None, "q to quit the app")
        assert app.main_screen.query_one("#filter", Input).value == "sdb"
