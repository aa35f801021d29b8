"""The extended column set never drops r_await and w_await where the table has room for a
handful of columns ("the extended column set silently drops r_await and w_await, even at
200 columns")."""

from __future__ import annotations

import pytest

from tests.tui.canned import canned_app
from tests.tui.helpers import started, table, table_lines


@pytest.mark.parametrize("size", [(200, 50), (120, 36), (80, 24)], ids=str)
async def test_extended_columns_keep_the_awaits(size: tuple[int, int]) -> None:
    app = canned_app()
    async with app.run_test(size=size) as pilot:
        await started(pilot, app)
        await pilot.press("c")
        await pilot.pause()
        assert table(app).column_set == "extended"
        header = table_lines(app)[0]
        assert "r_await" in header and "w_await" in header, header
