"""#25: the charts, the header and the device table give Textual their own strips where their
styles add nothing (no border, padding, outline, tint, opacity or hatch), instead of a copy of
each line made by Textual's styles cache; what is painted is the same, and a style that would
change the lines sends them through Textual's path again."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.config import Config
from iotop_plus.tui.app import make_app
from iotop_plus.tui.engine.testing import on_styled_render, render_through_styles
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.plain_lines import plain_lines
from iotop_plus.tui.widgets.process_panel import ProcessList
from tests.support.frames import StepClock
from tests.support.synthetic import SyntheticTree
from tests.tui.helpers import started, step
from tests.tui.light_support import started_app


def textuals(widget: Widget, crop: Region) -> list[Strip]:
    """The lines as Textual's own path paints them (every line rendered again)."""
    return render_through_styles(widget, crop)


async def test_the_charts_and_header_paint_their_own_strips_the_same_as_textual(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with started_app(3) as (pilot, app):
        screen = app.main_screen
        widgets: list[Widget] = [
            screen.query_one(DeviceCharts),  # the five charts and their caption
            screen.query_one(HostHeader),
            screen.query_one(DeviceTable),
        ]
        through_cache: list[Widget] = []
        on_styled_render(monkeypatch, through_cache.append)
        await step(pilot, app, 2)
        await pilot.pause()
        assert not [w for w in through_cache if w in widgets]
        for widget in widgets:
            width, height = widget.size
            for crop in (Region(0, 0, width, height), Region(3, 1, width - 5, height - 1)):
                ours = widget.render_lines(crop)
                assert ours == textuals(widget, crop), widget
                assert all(s.cell_length == crop.width for s in ours)
        await pilot.press("p")  # the Processes tab: its list is a CursorList too
        await step(pilot, app)
        await pilot.pause()
        processes = screen.query_one(ProcessList)
        crop = processes.region.reset_offset
        assert crop.height > 2 and processes.render_lines(crop) == textuals(processes, crop)
        # Any braille drawn at all (the comparison is not of empty charts).
        charts = screen.query_one(DeviceCharts)
        assert any("⠀" < ch <= "⣿" for line in charts.chart_text("chart-iops") for ch in line)


async def test_a_table_with_a_scrollbar_paints_the_same_as_textual(
    tmp_path: Path, step_clock: StepClock
) -> None:
    tree = SyntheticTree(tmp_path / "host", 40)
    app = make_app(tree.roots, Config(interval=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        table = app.main_screen.query_one(DeviceTable)
        tree.advance(1.0)
        await step(pilot, app)
        table.scroll_to(y=3, animate=False)
        await pilot.pause()
        assert table.max_scroll_y > 0 and table.scroll_offset.y == 3  # a scrollbar, moved
        crop = table.region.reset_offset
        assert plain_lines(table, crop, table.size.width, table.render_line) is not None
        assert table.render_lines(crop) == textuals(table, crop)


async def test_a_style_that_changes_the_lines_paints_them_through_textual() -> None:
    async with started_app(3) as (pilot, app):
        chart = app.main_screen.query_one(DeviceCharts)
        chart.styles.padding = (0, 2)
        chart.styles.tint = "red 40%"
        await step(pilot, app)
        await pilot.pause()
        crop = chart.region.reset_offset
        painted = chart.render_lines(crop)
        assert painted == textuals(chart, crop)
        assert painted[2].text.startswith("  ")  # the padding is there


def test_a_line_in_truecolor_skips_the_ansi_filter_and_one_in_ansi_colours_does_not() -> None:
    """The ANSI colour filter would give a truecolor line back unchanged (then it is painted as
    it is, no copy); a line with an ANSI colour, or a dim colour, goes through it."""
    from rich.color import Color as RichColor
    from rich.segment import Segment
    from rich.style import Style
    from rich.terminal_theme import DEFAULT_TERMINAL_THEME
    from textual.color import Color
    from textual.filter import ANSIToTruecolor

    from iotop_plus.tui.widgets.plain_lines import truecolor_already

    ansi = ANSIToTruecolor(DEFAULT_TERMINAL_THEME)
    background = RichColor.from_rgb(30, 30, 30)
    plain = [Segment(" 12┤", Style(dim=True)), Segment("⣀⡇", Style(color="#5fafff")), Segment("  ")]
    assert truecolor_already(Strip(plain), ansi, background)
    for odd in (
        Style(color="red"),
        Style(bgcolor="blue"),
        Style(color="color(3)"),
        Style(dim=True, color="#5fafff"),  # the filter blends a dim colour into the background
    ):
        strip = Strip([*plain, Segment("x", odd)])
        assert not truecolor_already(strip, ansi, background), odd
        filtered = strip.apply_filter(ansi, Color(30, 30, 30))
        assert filtered != strip  # the filter does change it: the test is of something
    same = Strip(plain).apply_filter(ansi, Color(30, 30, 30))
    assert same == Strip(plain)  # and leaves the truecolor line as it was


def test_a_style_equal_to_one_the_filter_saw_first_skips_it_too() -> None:
    """The filter keeps its answer by style, and rich's styles are equal by value: for the
    table's ``dim`` it gives back the charts' (seen first), which paints the same. The line is
    painted as it is, not copied at every paint."""
    from rich.color import Color as RichColor
    from rich.segment import Segment
    from rich.style import Style
    from rich.terminal_theme import DEFAULT_TERMINAL_THEME
    from textual.filter import ANSIToTruecolor

    from iotop_plus.tui.widgets.plain_lines import truecolor_already

    ansi = ANSIToTruecolor(DEFAULT_TERMINAL_THEME)
    background = RichColor.from_rgb(30, 30, 30)
    first, mine = Style(dim=True), Style(dim=True)
    assert ansi.truecolor_style(first, background) is first  # seen first: kept
    assert ansi.truecolor_style(mine, background) is first  # equal: the first given back
    assert truecolor_already(Strip([Segment("   -", mine)]), ansi, background)


async def test_the_charts_lines_are_all_in_truecolor_already() -> None:
    """So a changed chart line is painted without a copy made by the ANSI colour filter."""
    from textual.filter import ANSIToTruecolor

    from iotop_plus.tui.widgets.plain_lines import truecolor_already

    async with started_app(3) as (pilot, app):
        await step(pilot, app, 2)
        await pilot.pause()
        (ansi,) = [f for f in app.get_line_filters() if isinstance(f, ANSIToTruecolor)]
        charts = list(app.main_screen.query(DeviceCharts))
        assert len(charts) == 1
        for chart in charts:
            background = chart.background_colors[1].rich_color
            lines = chart.render_lines(chart.region.reset_offset)
            assert all(truecolor_already(line, ansi, background) for line in lines), chart
