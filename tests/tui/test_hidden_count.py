"""Hidden devices are counted on screen ("Loop devices are hidden with no count of what is
hidden"): the table says "N hidden (a: show all)"."""

from __future__ import annotations

from tests.tui.canned import canned_app
from tests.tui.helpers import started, table, table_lines


async def test_the_table_counts_what_it_hides() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        everything = len(t._counters_names)
        assert 0 < t.hidden == everything - len(t.rows)
        lines = table_lines(app)
        assert f"{t.hidden} hidden" in lines[1]  # under "Device", beside the units
        assert any(f"{t.hidden} hidden (a: show all)" in line for line in lines), lines
        await pilot.press("a")
        await pilot.pause()
        assert t.hidden == 0 and len(t.rows) == everything
        assert not any("hidden" in line for line in table_lines(app))


async def test_at_80_columns_the_count_under_device_is_never_a_cut_word() -> None:
    """With short names the Device column is 7 wide: "4 hidden" was shown as "4 hidd"."""
    app = canned_app(devices=("sda",))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert t._device_width == 7 and t.hidden >= 2
        cell = table_lines(app)[1][: t._device_width].strip()
        assert cell in (f"{t.hidden} hidden", f"{t.hidden} hid.", f"+{t.hidden}"), cell


async def test_devices_named_on_the_command_line_are_shown_alone_and_the_first_is_selected() -> (
    None
):
    """#17 item 5: "the TUI takes no arguments, though iostat takes DEV..."."""
    probe = canned_app()
    async with probe.run_test(size=(120, 36)) as pilot:
        await started(pilot, probe)
        t = table(probe)
        hidden_loop = next(n for n in t._counters_names if n.startswith("loop"))
        visible = t.rows[-1].name
    app = canned_app(devices=(hidden_loop, visible))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert {r.name for r in t.rows} == {hidden_loop, visible}
        assert t.selected == hidden_loop  # the first named, not the first row
        assert app.main_screen.selected_device == hidden_loop
        assert t.hidden == len(t._counters_names) - 2
        await pilot.press("a")
        await pilot.pause()
        assert len(t.rows) == len(t._counters_names)
