"""Keys typed ahead of a dialog reach it (tui/type_ahead.py).

A tired SRE over SSH types ``R64⏎`` in one go. All four keys reach the main screen before
``R`` has opened the read-ahead picker; Textual then dropped the digits and let Enter pick the
highlighted (current) value, so read-ahead was not what was typed. In a tmux run the same race
set read-ahead to 1 KiB (0 after rounding) instead of 16.
"""

from __future__ import annotations

from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.tui.screens.settings_modals import ValuePickerScreen
from tests.support.wait import wait_for
from tests.tui.helpers import burst, started, table
from tests.tui.test_journal_tui import app_with, read_ahead, tree  # noqa: F401 - fixture


async def test_read_ahead_typed_with_its_key_in_one_burst_is_what_is_written(
    tree: Roots,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    app = app_with(tree, tmp_path / "state")
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await burst(pilot, "slash", "s", "d", "a", "enter")
        await wait_for(pilot, lambda: table(app).selected == "sda")
        screen = app.main_screen
        await wait_for(pilot, lambda: screen.selection.settings_of("sda") is not None)
        assert read_ahead(tree) == "128"
        await burst(pilot, "R", "6", "4", "enter")
        await wait_for(pilot, lambda: read_ahead(tree) == "64", what="read-ahead 64 written")
        assert not isinstance(app.screen, ValuePickerScreen)
