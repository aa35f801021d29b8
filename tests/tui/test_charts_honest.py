"""The charts tell the truth and stay readable (#17 item 6): no invented points, round y
ticks with units, mark labels and lines inside their chart with the legend readable, and
the history drawn at once then every tick.

The charts are read as the screen shows them: the text of each chart widget's lines.
"""

from __future__ import annotations

import dataclasses
import math
import re
from itertools import pairwise
from types import MappingProxyType

import pytest

from iotop_plus.config import Config
from iotop_plus.sampling.store.timeline import Columns, Mark
from iotop_plus.tui.app import IotopPlusApp, make_app
from iotop_plus.tui.widgets.charts import DeviceCharts
from tests.tui.canned import HOST_ROOTS, START, CannedSampler, canned_app, filled, frames_before
from tests.tui.helpers import started, step, step_to, wait_for

CHART_IDS = ("chart-iops", "chart-throughput", "chart-await", "chart-queue", "chart-util")
DOT = re.compile("[\u2801-\u28ff]")  # a braille cell with at least one dot


def chart_lines(app: IotopPlusApp, chart_id: str) -> list[str]:
    """What one chart shows, line by line."""
    return app.main_screen.query_one(DeviceCharts).chart_text(chart_id)


def plot_dots(lines: list[str]) -> list[tuple[int, float]]:
    """(line, position across the plot 0..1) of every dotted braille cell right of the y
    axis."""
    out = []
    for y, line in enumerate(lines):
        axis = min((i for i in (line.find("┤"), line.find("│")) if i >= 0), default=-1)
        if axis < 0:
            continue
        width = len(line) - axis - 1
        for m in DOT.finditer(line, axis + 1):
            out.append((y, (m.start() - axis - 1) / max(width - 1, 1)))
    return out


WALL = 1_700_000_000.0
"""The canned sampler's wall time at ``START``."""


def _points(app: IotopPlusApp, device: str) -> Columns:
    """``device``'s chart points in the app's frame store."""
    return app.store.columns(device, 0.0, math.inf).with_rates()


def app_with_late_device() -> IotopPlusApp:
    """sdb has 60 s of history; dm-0 appeared 10 s ago. Rates are constant."""
    sampler = CannedSampler()
    frames = list(frames_before(sampler.roots, 60, steady=True))
    for k in range(51):  # dm-0 has rates from the 51st frame on
        frames[k] = dataclasses.replace(
            frames[k], rates=MappingProxyType({**frames[k].rates, "dm-0": None})
        )
    return make_app(
        HOST_ROOTS,
        Config(interval=10.0),
        sampler=sampler,
        store=filled(sampler.roots, frames),
        host=sampler.host_info(),
    )


async def test_charts_never_invent_points_before_the_first_sample() -> None:
    app = app_with_late_device()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        # The busiest device starts selected (#22 item 14): pick dm-0 by name.
        await pilot.press("slash", "d", "m", "minus", "0", "enter")
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: charts.device == "dm-0" and charts.draws > 0)
        await pilot.pause()
        dots = plot_dots(chart_lines(app, "chart-util"))
        assert dots
        # dm-0's first sample is 50 s into a 61 s window: nothing left of it, and its
        # constant %util is one flat line, not a ramp up from 0.
        assert min(x for _, x in dots) >= 0.7, sorted(dots)[:5]
        assert len({y for y, _ in dots}) == 1, dots


async def test_a_fresh_start_draws_its_few_points_at_the_right_not_stretched() -> None:
    app = canned_app(Config(interval=0.25), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await step_to(pilot, app, lambda: len(_points(app, "dm-0")) >= 3, "3 points")
        await pilot.pause()
        lines = chart_lines(app, "chart-util")
        dots = plot_dots(lines)
        assert dots
        # A second of a window of at least two minutes: the left is empty, and the x axis
        # reads in minutes.
        assert min(x for _, x in dots) >= 0.9, sorted(dots)[:5]
        assert re.search(r"-[12]m\b", lines[-1]), lines[-1]


def tick_values(lines: list[str]) -> list[float]:
    """The y tick labels of a chart (bottom up), as numbers."""
    scale = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}
    out = []
    for line in lines:
        m = re.match(r"^\s*(\d+(?:\.\d+)?)([kMG]?)\s?┤", line)
        if m:
            out.append(float(m.group(1)) * scale[m.group(2)])
    return sorted(out)


def is_125(step: float) -> bool:
    mantissa = step / 10 ** int(f"{step:e}".split("e")[1])
    return any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5))


UNITS = {
    "chart-iops": "IOPS",
    "chart-throughput": r"[KMG]iB/s",
    "chart-await": "ms",
    "chart-queue": "queue",
    "chart-util": "%",
}


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_y_ticks_are_round_1_2_5_steps_with_units(size: tuple[int, int]) -> None:
    app = canned_app(Config(interval=10.0))
    async with app.run_test(size=size) as pilot:
        await started(pilot, app)
        if app.main_screen.layout_views.narrow:
            await pilot.press("2")
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: charts.draws > 0)
        await pilot.pause()
        for chart_id in CHART_IDS:
            lines = chart_lines(app, chart_id)
            ticks = tick_values(lines)
            assert len(ticks) >= 2 and ticks[0] == 0, (chart_id, lines)
            steps = {round(b - a, 9) for a, b in pairwise(ticks)}
            assert len(steps) == 1 and is_125(steps.pop()), (chart_id, ticks)
            assert re.search(UNITS[chart_id], lines[0]), (chart_id, lines[0])


async def test_mark_labels_and_lines_stay_inside_their_charts_and_legends_stay_readable() -> None:
    app = canned_app(Config(interval=0.25))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        charts = app.main_screen.query_one(DeviceCharts)
        # Marks at the left edge, in the middle and at the newest point.
        for t in (START - 119, START - 60, START):
            app.store.mark(Mark(WALL + t - START, "read_ahead_kb 128→16", None))
        draws = charts.draws
        await step_to(pilot, app, lambda: charts.draws >= draws + 2, "two draws")
        legends = {
            "chart-iops": ("r/s", "w/s"),
            "chart-await": ("r(_await)?", "w(_await)?"),
            "chart-queue": ("aqu-sz",),
            "chart-util": ("%util",),
        }
        problems = []
        for chart_id in CHART_IDS:
            cell = charts.cells(charts.size.width, charts.size.height)[CHART_IDS.index(chart_id)]
            w = cell.width
            strips = charts.picture(chart_id).strips(w, cell.height)
            text = chart_lines(app, chart_id)
            # Nothing is drawn past the chart's own width (into the next chart or the panel).
            if any(s.cell_length > w for s in strips):
                problems.append((chart_id, "wider than the chart", text))
            for word in legends.get(chart_id, ()):
                # The legend entry is there, whole, and no mark label shares its line.
                line = next((t for t in text if re.search(rf"(^|\s|━){word}(\s|$)", t)), None)
                if line is None or "read_ahead" in line:
                    problems.append((chart_id, f"legend {word!r} covered", text))
            if not any("read_ahead_kb" in t for t in text):
                problems.append((chart_id, "no mark label", text))
        assert not problems, problems


async def test_charts_draw_the_history_at_once_and_every_tick_with_the_table() -> None:
    app = canned_app(Config(interval=0.25))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app, ticks=1)
        charts = app.main_screen.query_one(DeviceCharts)
        # The 120 s of history before the start are drawn with the first frames (under load
        # the very first draw can come before the device is selected: wait for the dots). A
        # few live points could not span the width: the history is what fills it.
        await step_to(pilot, app, lambda: bool(plot_dots(chart_lines(app, "chart-iops"))), "dots")
        dots = plot_dots(chart_lines(app, "chart-iops"))
        assert min(x for _, x in dots) <= 0.05 and max(x for _, x in dots) >= 0.95
        for _ in range(4):
            ticks, draws = app.frames_received, charts.draws
            await step(pilot, app)
            await pilot.pause()
            assert app.frames_received == ticks + 1
            # Every frame shown in the table is a point on the charts, drawn with it.
            assert charts.draws >= draws + 1
            assert app.main_screen.shown_frame is not None
