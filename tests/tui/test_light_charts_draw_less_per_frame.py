"""#25: a frame's new point costs the charts less: each chart keeps its legend, marks row and
x axis while they are drawn from the same things, looks its size up once per paint instead
of once per line (``Widget.size`` walks up to the screen), and the device charts keep their
charts instead of querying the DOM for each of them every frame. The picture is the same
(the snapshot tests)."""

from __future__ import annotations

from array import array
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.dom import DOMNode
from textual.geometry import Region, Size
from textual.pilot import Pilot
from textual.widget import Widget

from iotop_plus.sampling.store.timeline import METRICS, Columns, Mark
from iotop_plus.tui.widgets import charts as charts_module
from iotop_plus.tui.widgets.braille_chart import BrailleChart
from iotop_plus.tui.widgets.chart_scale import Line
from iotop_plus.tui.widgets.charts import DeviceCharts, joins
from tests.tui.helpers import step
from tests.tui.light_support import started_app


class OneChart(App[None]):
    """One braille chart alone, 26x11 cells."""

    CSS = "BrailleChart { width: 26; height: 11; }"

    def compose(self) -> ComposeResult:
        yield BrailleChart("iops", "IOPS")


def plot_minute(
    chart: BrailleChart, now: float, marks: list[tuple[float, str]], end_label: str = "now"
) -> None:
    """A minute of points at 1 s ending at ``now`` (a steady 100 r/s with a bump), with
    ``marks``, the x axis ending at ``end_label``."""
    stamps = [now - 59 + i for i in range(60)]
    times = [t - now for t in stamps]
    values = [100.0 + 40.0 * (int(t) % 9 == 0) for t in stamps]
    line = Line("r/s", Style(color="#5fafff"), values, "r")
    chart.plot(times, joins(times), [line], 60.0, marks, end_label, anchor=now)


@asynccontextmanager
async def chart_with_a_minute() -> AsyncIterator[tuple[Pilot[None], BrailleChart]]:
    """One chart alone with a minute of points ending at 1000 s, painted."""
    app = OneChart()
    async with app.run_test(size=(40, 15)) as pilot:
        chart = app.query_one(BrailleChart)
        plot_minute(chart, 1000.0, [])
        await pilot.pause()
        yield pilot, chart


@contextmanager
def drawn_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the chart parts drawn (legend, marks row, x axis), in order."""
    drawn: list[str] = []
    for name in ("_legend", "_mark_labels", "_x_axis"):
        real = getattr(BrailleChart, name)

        def spy(self: BrailleChart, *args: object, _real: Any = real, _name: str = name) -> object:
            drawn.append(_name)
            return _real(self, *args)

        monkeypatch.setattr(BrailleChart, name, spy)
    yield drawn


async def test_a_new_point_draws_no_legend_marks_row_or_x_axis_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = OneChart()
    async with app.run_test(size=(40, 15)) as pilot:
        chart = app.query_one(BrailleChart)
        marks = [(-20.0, "probe")]
        plot_minute(chart, 1000.0, marks)
        await pilot.pause()
        with drawn_parts(monkeypatch) as drawn:
            plot_minute(chart, 1001.0, [(-21.0, "probe")])  # the same mark, a second older
            await pilot.pause()
            assert drawn == []
            lines = [s.text for s in chart.render_lines(Region(0, 0, 26, 11))]
            assert "IOPS" in lines[0] and "probe" in lines[1] and "now" in lines[-1]
            # What they show changes: drawn again.
            plot_minute(chart, 1002.0, [(-2.0, "sched")], "0")
            assert sorted(drawn) == ["_mark_labels", "_x_axis"]
        lines = [s.text for s in chart.render_lines(Region(0, 0, 26, 11))]
        assert "sched" in lines[1] and lines[-1].rstrip().endswith("0")


async def test_painting_a_chart_looks_its_size_up_once_not_once_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with chart_with_a_minute() as (_, chart):
        lookups: list[Size] = []
        real = Widget.size

        def size(self: Widget) -> Size:
            got = real.fget(self)  # type: ignore[attr-defined]
            if self is chart:
                lookups.append(got)
            return got

        chart.refresh()  # every line painted again
        monkeypatch.setattr(Widget, "size", property(size))
        lines = chart.render_lines(Region(0, 0, 26, 11))
        assert len(lines) == 11 and "IOPS" in lines[0].text
        assert lookups == [Size(26, 11)]


async def test_the_device_charts_draw_without_querying_for_their_charts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with started_app(3) as (pilot, app):
        charts = app.main_screen.query_one(DeviceCharts)
        queries: list[str] = []
        real = DOMNode.query_one

        def query_one(self: DOMNode, selector: object, *args: object, **kwargs: object) -> object:
            if self is charts:
                queries.append(str(selector))
            return real(self, selector, *args, **kwargs)  # type: ignore[call-overload]

        monkeypatch.setattr(DOMNode, "query_one", query_one)
        draws = charts.draws
        await step(pilot, app, 2)
        await pilot.pause()
        assert charts.draws > draws  # the charts were drawn, with new points
        assert queries == []
        assert any("⠀" < ch <= "⣿" for line in charts.chart_text("chart-iops") for ch in line)


async def test_a_new_point_draws_only_the_plot_rows_it_changes_and_the_picture_is_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with chart_with_a_minute() as (_, chart):
        rows: list[int] = []
        real = BrailleChart._plot_row

        def spy(self: BrailleChart, cells: Any, row: int, *args: Any) -> Any:
            rows.append(row)
            return real(self, cells, row, *args)

        monkeypatch.setattr(BrailleChart, "_plot_row", spy)
        plot_minute(chart, 1001.0, [])
        plot_h = 11 - 3  # legend, marks row, x axis
        assert 0 < len(rows) < plot_h  # a new point touches a row or two, not all eight
        kept = chart.build(26, 11)
        fresh = BrailleChart("iops", "IOPS")
        fresh._column_s = chart._column_s  # the same column width as the kept chart's
        plot_minute(fresh, 1001.0, [])
        assert kept == fresh.build(26, 11)  # the same characters and styles
        rows.clear()
        plot_minute(chart, 1001.0, [(-10.0, "probe")])  # a mark's line crosses every row
        assert len(rows) == plot_h


class ChartsAlone(App[None]):
    """The device charts alone, at their size on a 120x36 screen."""

    CSS = "DeviceCharts { width: 78; height: 23; }"

    def compose(self) -> ComposeResult:
        yield DeviceCharts()


async def test_a_frame_joins_again_only_the_lines_whose_charts_changed_and_they_are_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    joined: list[int] = []
    real = charts_module._joined

    def spy(pieces: Any, cells: Any, width: int) -> Any:
        joined.append(width)
        return real(pieces, cells, width)

    monkeypatch.setattr(charts_module, "_joined", spy)
    app = ChartsAlone()
    async with app.run_test(size=(80, 25)) as pilot:
        charts = app.query_one(DeviceCharts)
        start = 1_000_000.0
        walls = array("d")
        figures: dict[str, array[float]] = {m: array("f") for m in METRICS}
        for k in range(45):
            walls.append(start + k)
            for m in METRICS:
                figures[m].append(100.0 + 40.0 * (k % 7 == 0))
            marks = [Mark(start + 20, "probe")] if k >= 30 else []
            joined.clear()
            legends = charts._lines[1] if charts._lines else None  # the top charts' legends
            charts.draw("sda", Columns(walls, figures), marks, walls[-1], min_span=30.0)
            await pilot.pause()
            if k < 3:
                continue
            # The lines the new point moved are joined again: with no mark, the one or two
            # rows each line's dots are on (a mark's line crosses every plot row). The
            # legends' line stays as it was.
            assert 0 < len(joined) <= (8 if not marks else 20)
            assert charts._lines[1] is legends
            layout = charts._shape()
            kept = [(line.text, [s.style for s in line]) for line in charts._lines]
            charts._built_for = None  # joined whole from the charts' lines, as at a resize
            whole = charts._join_lines(layout)
            charts._built_for = layout
            assert kept == [(line.text, [s.style for s in line]) for line in whole]
