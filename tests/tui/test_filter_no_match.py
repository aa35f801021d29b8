"""A filter that matches nothing says so, instead of an empty table that looks like a host
with no disks."""

from __future__ import annotations

from tests.tui.canned import canned_app
from tests.tui.helpers import started, table_lines


async def test_a_filter_that_matches_nothing_says_so() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        lines = table_lines(app)
        assert any("no device matches 'zzz' (Esc clears)" in line for line in lines), lines
        await pilot.press("escape")
        await pilot.pause()
        assert not any("no device matches" in line for line in table_lines(app))
