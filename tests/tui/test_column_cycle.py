"""`c` keeps the sort and the selection ("`c` resets the sort and loses the selection")."""

from __future__ import annotations

from tests.tui.canned import canned_app
from tests.tui.helpers import started, table


async def test_c_keeps_the_sort_figure_and_the_selected_device() -> None:
    app = canned_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await started(pilot, app)
        t = table(app)
        await pilot.press("greater_than_sign", "greater_than_sign")  # sort by w/s
        assert t.sort_title == "w/s"
        await pilot.press("down", "down")
        chosen = t.selected
        assert chosen is not None
        await pilot.press("c")
        await pilot.pause()
        assert t.column_set == "extended"
        assert t.sort_title == "w/s", t.sort_title
        assert t.selected == chosen
        assert app.main_screen.selected_device == chosen
        await pilot.press("c")
        await pilot.pause()
        assert t.sort_title == "w/s" and t.selected == chosen
