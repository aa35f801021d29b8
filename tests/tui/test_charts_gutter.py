"""Charts side by side never touch: after each chart but the last of a grid row a blank
column, so a plot's last column is never read as part of the next chart's y label ("⣤800┤"),
at 120x36 and at 80x24 (the Charts tab)."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from iotop_plus.tui.widgets.charts import DeviceCharts
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for

LABEL = re.compile(r"[0-9.kMG%]+┤")


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_each_chart_s_labels_have_a_blank_column_before_them(size: tuple[int, int]) -> None:
    app = canned_app()
    async with app.run_test(size=size) as pilot:
        await started(pilot, app)
        if size[0] < 100:
            await pilot.press("2")  # the Charts tab
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: charts.draws > 0 and charts.size.width > 0, "charts drawn")
        await pilot.pause()
        width, height = charts.size.width, charts.size.height
        cells = charts.cells(width, height)
        lines = [charts.render_line(y).text for y in range(height)]
        labels = 0
        for row in (cells[:3], cells[3:]):
            for left, right in pairwise(row):
                assert right.x - left.right >= 1, (left, right)  # a gutter between them
                for y in right.line_range:
                    line = lines[y]
                    assert line[left.right : right.x].strip() == "", line
                    label = LABEL.match(line[right.x :].lstrip())
                    if label is not None and right is not cells[5]:
                        labels += 1
                        before = line[: right.x + line[right.x :].index(label.group())]
                        assert before.endswith(" "), line
        assert labels >= 6  # the y labels of the middle and right charts were looked at
