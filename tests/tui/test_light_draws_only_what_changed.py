"""#25: a frame redraws what changed and nothing more.

Once the screen has settled at a fixed size, frames change the header's clock, the charts and
the table's figures, but nothing changes size: no frame may ask for a layout pass (a reflow of
the whole screen, ~18 % of the TUI's busy time in the profile), and a widget whose text did not
change is not refreshed.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from textual.widget import Widget

from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.header import HostHeader
from tests.support.frames import StepClock
from tests.tui.helpers import step
from tests.tui.light_support import memory_fact, started_app, texts_through

Call = tuple[str, str | None, bool]
"""(widget class, id, whether a layout pass was asked for)."""


@contextmanager
def refreshes(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[Call]]:
    """Count every widget refresh while the block runs."""
    calls: collections.Counter[Call] = collections.Counter()
    original = Widget.refresh

    def counting(self: Widget, *regions: object, **kwargs: bool) -> Widget:
        calls[(type(self).__name__, self.id, bool(kwargs.get("layout")))] += 1
        return original(self, *regions, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Widget, "refresh", counting)
    yield calls


async def test_steady_frames_ask_for_no_layout_pass(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with started_app(3) as (pilot, app):
        charts = app.main_screen.query_one(DeviceCharts)
        draws = charts.draws
        with refreshes(monkeypatch) as calls:
            await step(pilot, app, 5)
            await pilot.pause()
        assert charts.draws == draws + 5  # the charts did follow every frame
        assert calls[("HostHeader", "header", False)] >= 5  # and the clock moved
        assert [call for call in calls if call[2]] == []


async def test_a_widget_whose_text_did_not_change_is_not_refreshed(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with started_app(2) as (pilot, app):
        screen = app.main_screen
        charts = screen.query_one(DeviceCharts)
        header = screen.query_one(HostHeader)
        with refreshes(monkeypatch) as calls:
            screen.charts.draw(force=True)  # the same window again: the same charts and caption
            header.show(note=header.note)  # the same header text
            await pilot.pause()
        chart_calls = [("DeviceCharts", charts.id, layout) for layout in (False, True)]
        assert sum(calls[call] for call in chart_calls) == 0
        assert calls[("HostHeader", "header", False)] + calls[("HostHeader", "header", True)] == 0


FACTS = [
    ("why", "no clear cause (unchecked: throttled, writeback, queue, blocked)"),
    ("device", "/dev/nvme0n1  (nvme)"),
    ("memory", "dirty 20.3M (bg 2.2G, max 4.5G)  writeback 0"),
]


@pytest.mark.parametrize("width", [20, 39, 80, 200])
def test_device_facts_read_as_the_grid_table_did(width: int) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from iotop_plus.tui.widgets.device_panel import LABEL_STYLE, fact_lines

    console = Console(width=width, color_system=None)
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for label, value in FACTS:
        table.add_row(label, Text(value))
    with console.capture() as grid:
        console.print(table)
    ours = Text(no_wrap=True, overflow="crop")
    for label, line in fact_lines(FACTS, width, console):
        ours.append_text(Text(label, LABEL_STYLE) + Text(line + "\n"))
    with console.capture() as printed:
        console.print(ours, end="")
    assert printed.get().splitlines() == grid.get().splitlines()


async def test_new_figures_in_the_device_facts_ask_for_no_layout_pass(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the memory line appears: a new height
    async with memory_fact(monkeypatch, "dirty 20.3M (bg 2.2G)") as (pilot, tab):
        facts = tab.panel.query_one("#device-facts")
        painted: list[tuple[object, ...]] = []
        with refreshes(monkeypatch) as calls:
            original = Widget.refresh  # the counting one

            def spy(self: Widget, *regions: object, **kwargs: bool) -> Widget:
                if self is facts:
                    painted.append(regions)
                return original(self, *regions, **kwargs)  # type: ignore[arg-type]

            monkeypatch.setattr(Widget, "refresh", spy)
            for dirty in ("19.8M", "21.0M", "20.9M"):  # the memory line, frame after frame
                tab.show(f"dirty {dirty} (bg 2.2G)")
                await pilot.pause()
        assert "dirty 20.9M" in tab.panel.text
        assert calls[("_Facts", "device-facts", True)] == 0
        # line by line: the memory line (and any other figure that moved), not the whole panel
        lines = facts.size.height
        assert painted and all(0 < len(regions) < lines // 2 for regions in painted), painted
        assert all(getattr(r, "height", 0) == 1 for regions in painted for r in regions)
        with refreshes(monkeypatch) as calls:
            # now it wraps to more lines: a reflow
            tab.show("dirty 20.9M (bg 2.2G) " + "and a long line that wraps " * 3)
            await pilot.pause()
        assert calls[("_Facts", "device-facts", True)] >= 1


async def test_a_chart_repaints_only_the_lines_that_changed(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from iotop_plus.tui.widgets.chart_scale import Line
    from iotop_plus.tui.widgets.charts import DeviceCharts

    async with started_app(2) as (_, app):
        charts = app.main_screen.query_one(DeviceCharts)
        chart = charts.picture("chart-iops")
        height = charts.cells(charts.size.width, charts.size.height)[0].height
        painted: list[tuple[object, ...]] = []
        original = Widget.refresh

        def spy(self: Widget, *regions: object, **kwargs: bool) -> Widget:
            if self is charts:
                painted.append(regions)
            return original(self, *regions, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Widget, "refresh", spy)
        again = (chart.times, chart.connect, chart.lines, chart.span, chart.marks, chart.end_label)
        chart.set_data(*again, anchor=chart.end_time)
        charts.repaint()  # the same picture: nothing to paint
        assert painted == []
        first = chart.lines[0]
        spike = [*first.values[:-1], max(first.values) * 0.5]  # the newest point moves
        chart.set_data(
            chart.times,
            chart.connect,
            [Line(first.label, first.style, spike, first.short), *chart.lines[1:]],
            chart.span,
            chart.marks,
            chart.end_label,
            anchor=chart.end_time,
        )
        charts.repaint()
        assert painted, "the moved point was not painted"
        lines = [region for call in painted for region in call]
        assert lines and all(getattr(r, "height", 0) == 1 for r in lines)  # line by line
        assert all(getattr(r, "y", height) < height for r in lines)  # in its chart's grid row
        assert len(lines) < height - 2  # not the legend and the x axis


def test_a_fact_that_did_not_change_is_not_wrapped_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from iotop_plus.tui.widgets.device_panel import fact_lines

    console = Console(width=39)
    with texts_through(monkeypatch, "wrap") as wraps:
        first = fact_lines(FACTS, 39, console)
        wraps.clear()
        moved = [*FACTS[:2], ("memory", "dirty 19.9M (bg 2.2G, max 4.5G)  writeback 0")]
        second = fact_lines(moved, 39, console)
    assert wraps == [moved[2][1]]  # only the memory line is wrapped again
    assert second[:-2] == first[:-2]
    assert second[-2:] != first[-2:]
