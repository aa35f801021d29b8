"""#25: a frame repaints the lines whose text changed, and no others.

Every line Textual repaints costs twice: the widget renders it, and the compositor cuts every
widget on that screen row again. So a frame with the same figures repaints no table line; a
busy hidden device coming or going repaints the one line under the rows that names it, not
the whole table; and the chart caption, whose sample count moves every frame until the
history is full, repaints the line that count is on, not all of its lines. Counted through a
spy on ``refresh`` (the regions asked for), never through time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.widgets.braille_chart import BrailleChart
from iotop_plus.tui.widgets.chart_scale import Line
from iotop_plus.tui.widgets.charts import DeviceCharts, joins
from iotop_plus.tui.widgets.device_table import HEADER_LINES, DeviceTable
from tests.support.frames import StepClock
from tests.tui.helpers import step
from tests.tui.light_support import fact_strips_made, memory_fact, started_app, table_alone
from tests.tui.test_starting_device_and_busy_hidden import LOOP0_BUSY


@contextmanager
def repaints(monkeypatch: pytest.MonkeyPatch, widget: Widget) -> Iterator[list[tuple[Region, ...]]]:
    """The regions of every ``refresh`` of ``widget`` that repaints, while the block runs
    (() = all of it; ``repaint=False`` only drops cached sizes and paints nothing)."""
    calls: list[tuple[Region, ...]] = []
    original = Widget.refresh

    def spy(self: Widget, *regions: Region, **kwargs: bool) -> Widget:
        if self is widget and kwargs.get("repaint", True):
            calls.append(regions)
        return original(self, *regions, **kwargs)

    monkeypatch.setattr(Widget, "refresh", spy)
    yield calls


def lines_of(t: DeviceTable) -> list[str]:
    """The text of every line the table shows."""
    return [t.render_line(y).text.rstrip() for y in range(t.size.height)]


def show(t: DeviceTable, frame: Frame, rates: object = None) -> None:
    """A steady frame: the same devices, these rates (the frame's own by default)."""
    t.update_devices(
        rates or frame.rates,  # type: ignore[arg-type]
        frame.inventory,
        frame.ever_used,
        frame.nr_requests,
        False,
    )


async def test_a_frame_with_unchanged_figures_refreshes_no_table_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with table_alone(tmp_path) as (pilot, t, frame):
        with repaints(monkeypatch, t) as calls:
            show(t, frame)
            show(t, frame)
            await pilot.pause()
        assert calls == []


async def test_a_busy_hidden_device_going_quiet_repaints_only_the_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with table_alone(tmp_path, loop0=LOOP0_BUSY) as (pilot, t, frame):
        assert t.busy_hidden == "loop0"
        assert any("loop0 busy" in line for line in lines_of(t))
        with repaints(monkeypatch, t) as calls:
            show(t, frame, {**frame.rates, "loop0": None})  # loop0 went quiet (no rates)
            await pilot.pause()
        assert t.busy_hidden is None
        note = Region(0, HEADER_LINES + len(t.rows), t.size.width, 1)
        assert calls == [(note,)]
        lines = lines_of(t)
        assert not any("busy" in line for line in lines)
        assert any(f"{t.hidden} hidden (a: show all)" in line for line in lines)
        with repaints(monkeypatch, t) as calls:
            show(t, frame)  # busy again
            await pilot.pause()
        assert calls == [(note,)]
        assert any("loop0 busy" in line for line in lines_of(t))


async def test_a_new_sample_count_changes_only_the_caption_line_it_moved(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with started_app(2, with_history=False) as (pilot, app):
        charts = app.main_screen.query_one(DeviceCharts)
        cell = charts.cells(charts.size.width, charts.size.height)[-1]  # the caption's
        assert cell.height > 3

        def caption_lines() -> list[Strip]:
            return [charts.render_line(y).crop(cell.x, cell.right) for y in cell.line_range]

        counts = []
        for _ in range(3):
            before = caption_lines()
            await step(pilot, app)
            await pilot.pause()
            after = caption_lines()
            counts.append(charts.caption.split(" samples")[0])
            assert [y for y, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [0]
        assert len(set(counts)) == 3, counts  # the count moved every frame
        assert caption_lines()[0].text.strip().startswith(counts[-1] + " samples")
        # Only the paragraph that moved is wrapped again; the lines equal a whole wrap's.
        wrapped: list[str] = []
        real_wrap = Text.wrap

        def wrap(self: Text, *args: Any, **kwargs: Any) -> Any:
            wrapped.append(self.plain)
            return real_wrap(self, *args, **kwargs)

        monkeypatch.setattr(Text, "wrap", wrap)
        await step(pilot, app)
        await pilot.pause()
        # (Other widgets wrap too: the Device tab's facts wrap a value the first time they
        # show it, and on a loaded run their first paint can fall in this frame.)
        paragraphs = charts.caption.split("\n")
        wrapped = [plain for plain in wrapped if plain in paragraphs]
        # (A paragraph that fits in the width is one line as it is: not wrapped at all.)
        assert all(plain.endswith(" samples") for plain in wrapped), wrapped
        whole = [
            f" {line.plain}".ljust(cell.width)
            for line in Text(charts.caption).wrap(app.console, cell.width - 2)
        ]
        assert [line.text for line in caption_lines()][: len(whole)] == whole


async def test_a_changed_table_row_is_built_once_a_frame_not_again_at_the_paint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with table_alone(tmp_path) as (pilot, t, frame):
        quiet = t.visible_names()[-1]
        assert quiet != t.selected
        built: list[str] = []
        original = DeviceTable._row_content

        def spy(self: DeviceTable, row: object, selected: bool) -> object:
            built.append(row.name)  # type: ignore[attr-defined]
            return original(self, row, selected)  # type: ignore[arg-type]

        monkeypatch.setattr(DeviceTable, "_row_content", spy)
        with repaints(monkeypatch, t) as calls:
            show(t, frame, {**frame.rates, quiet: None})  # its figures go: dashes
            await pilot.pause()
        row_y = HEADER_LINES + t.visible_names().index(quiet)
        assert calls == [(Region(0, row_y, t.size.width, 1),)]
        assert lines_of(t)[row_y].split()[1:] == ["-"] * len(t.columns)
        assert sorted(built) == sorted(t.visible_names())  # each row once: no second build


async def test_a_fact_wrapping_to_fewer_lines_again_asks_for_no_layout_pass(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writing host: writeback moves between 0 and a figure, and the line wraps to three
    # lines, then two, frame after frame.
    long = "dirty 32.5M (bg 2.2G, max 4.4G)  writeback 64K " + "x" * 30
    short = "dirty 33.0M (bg 2.2G, max 4.4G)  writeback 0"
    # the tallest text yet first: a reflow, once
    async with memory_fact(monkeypatch, long) as (pilot, tab):
        facts = tab.panel.query_one("#device-facts")
        height = facts.size.height
        layouts: list[bool] = []
        original = Widget.refresh

        def spy(self: Widget, *regions: Region, **kwargs: bool) -> Widget:
            if self is facts:
                layouts.append(bool(kwargs.get("layout")))
            return original(self, *regions, **kwargs)

        monkeypatch.setattr(Widget, "refresh", spy)
        for text in (short, long, short):
            tab.show(text)
            await pilot.pause()
            assert facts.size.height == height
        assert layouts and not any(layouts), layouts  # lines repainted, never a reflow
        assert "writeback 0" in tab.panel.text
        shown = [facts.render_line(y).text.rstrip() for y in range(height)]
        assert shown[-1] == ""  # the line the long text had is blank now
        assert any("writeback 0" in line for line in shown)


class OneChart(App[None]):
    """One braille chart alone, 26x11 cells."""

    CSS = "BrailleChart { width: 26; height: 11; }"

    def compose(self) -> ComposeResult:
        yield BrailleChart("iops", "IOPS")


async def test_a_chart_redrawn_whole_asks_for_one_region_not_one_per_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    times = [float(t) for t in range(-59, 1)]
    connect = joins(times)
    app = OneChart()
    async with app.run_test(size=(40, 15)) as pilot:
        chart = app.query_one(BrailleChart)
        chart.plot(times, connect, [Line("r/s", Style(), [10.0] * 60)], 60.0, anchor=1000.0)
        await pilot.pause()
        before = chart.render_lines(Region(0, 0, 26, 11))
        with repaints(monkeypatch, chart) as calls:
            # Another scale: every tick, every plot row and the legend stay or change at once.
            values = [float(900 + (i % 7) * 30) for i in range(60)]
            chart.plot(times, connect, [Line("r/s", Style(), values)], 60.0, anchor=1000.0)
            await pilot.pause()
        after = chart.render_lines(Region(0, 0, 26, 11))
        changed = {y for y, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}
        assert len(changed) >= 6
        assert len(calls) == 1
        (regions,) = calls
        assert len(regions) <= 2, regions  # adjacent lines are one region
        covered = {y for r in regions for y in range(r.y, r.y + r.height)}
        assert changed <= covered


async def test_adjacent_changed_table_rows_are_one_region(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with table_alone(tmp_path) as (pilot, t, frame):
        names = t.visible_names()
        quiet = [n for n in names if n != t.selected][-2:]
        first = names.index(quiet[0])
        assert names.index(quiet[1]) == first + 1
        with repaints(monkeypatch, t) as calls:
            show(t, frame, {**frame.rates, quiet[0]: None, quiet[1]: None})
            await pilot.pause()
        assert calls == [(Region(0, HEADER_LINES + first, t.size.width, 2),)]
        shown = lines_of(t)
        assert all(set(shown[HEADER_LINES + first + i].split()[1:]) == {"-"} for i in (0, 1))


async def test_a_fact_wrapping_to_another_line_count_renders_only_the_lines_that_changed(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = "dirty 33.0M (bg 2.2G, max 4.4G)  writeback 0"
    async with memory_fact(monkeypatch, short) as (pilot, tab):
        with fact_strips_made(monkeypatch) as rendered:
            for text in (
                "dirty 32.5M (bg 2.2G, max 4.4G)  writeback 64K " + "x" * 30,  # a line more
                "dirty 33.1M (bg 2.2G, max 4.4G)  writeback 0",  # and back
            ):
                rendered.clear()
                tab.show(text)
                await pilot.pause()
                assert rendered, "the memory line was not drawn"
                # the memory fact's lines (label, then continuation lines), not the ~30 others
                assert rendered[0].startswith("memory"), rendered
                assert all(line.startswith(" ") for line in rendered[1:]), rendered
                assert len(rendered) <= 4, rendered
        assert "writeback 0" in tab.panel.text
