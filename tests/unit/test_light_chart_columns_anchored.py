"""#25: a chart's dot columns hold fixed slices of time, so a new point changes the newest
column (and the oldest, which loses the point that left the window) only, and the picture
shifts by whole columns, not every point at every frame."""

from __future__ import annotations

import math
import random

from rich.style import Style

from iotop_plus.tui.widgets.braille_chart import BrailleChart
from iotop_plus.tui.widgets.chart_scale import (
    Line,
    anchored_column,
    column_seconds,
    columns,
    runs_for,
)
from iotop_plus.tui.widgets.charts import joins

CAPACITY = 900
WIDTH, HEIGHT = 26, 11


def _frames(count: int, seed: int = 25) -> list[tuple[float, list[float], list[float]]]:
    """(now, stamps, values) of ``count`` frames at 1 s, a full ring of noisy figures."""
    rnd = random.Random(seed)
    stamps = [1000.0 + i + rnd.uniform(-0.02, 0.02) for i in range(CAPACITY + count)]
    values = [rnd.uniform(50, 150) + 40 * math.sin(i / 30) for i in range(CAPACITY + count)]
    out = []
    for k in range(count):
        window = slice(k, k + CAPACITY)
        out.append((stamps[k + CAPACITY - 1], stamps[window], values[window]))
    return out


def _picture(
    chart: BrailleChart, now: float, stamps: list[float], values: list[float]
) -> list[str]:
    times = [t - now for t in stamps]
    line = Line("r/s", Style(color="blue"), values)
    chart.plot(times, joins(times), [line], now - stamps[0], anchor=now)
    return [strip.text for strip in chart.build(WIDTH, HEIGHT)]


def test_a_new_point_changes_only_the_newest_and_oldest_columns_between_column_steps() -> None:
    chart = BrailleChart("iops", "IOPS")
    frames = _frames(40)
    pictures = [_picture(chart, now, stamps, values) for now, stamps, values in frames]
    assert chart._column_s is not None
    column = chart._column_s[1]
    quiet = 0
    for (now_a, *_), (now_b, *_), a, b in zip(
        frames, frames[1:], pictures, pictures[1:], strict=False
    ):
        if math.floor(now_a / column) != math.floor(now_b / column) or a[0] != b[0]:
            continue  # a column step, or a new scale: the picture may move
        quiet += 1
        plot_a, plot_b = a[2:-1], b[2:-1]  # below the legend and marks row, above the x axis
        # Every cell but the first and the last of the plot (the oldest and the newest dot
        # columns) is as it was; the y ticks end at the "┤" or "│" of the axis.
        start = plot_a[0].index("┤" if "┤" in plot_a[0] else "│") + 2
        assert [row[start:-1] for row in plot_a] == [row[start:-1] for row in plot_b]
        assert a[-1] == b[-1]  # the x axis does not move
    assert quiet >= 20, "most frames fall between two column steps"


def test_the_column_width_holds_while_the_window_jitters() -> None:
    widths = {column_seconds(900 + jitter / 50, 44, None) for jitter in range(-2, 3)}
    was = column_seconds(900.0, 44)
    assert len({column_seconds(900 + j / 50, 44, was) for j in range(-2, 3)}) == 1
    assert all(w * 43 >= 899.9 for w in widths)  # the window fits in the columns
    assert was * 43 <= 900 * 1.1 + 1e-6  # and fills at least ~nine tenths of them


def _runs_point_by_point(
    times: list[float], connect: list[bool], width: float, dots_w: int, anchor: float
) -> list[tuple[int, int, int, bool]]:
    """Each point's anchored column, clamped to the chart, then grouped: the reference."""
    last = dots_w - 1
    cols = [anchored_column(anchor + t, anchor, width, last) for t in times]
    return columns([min(last, max(0, c)) for c in cols], connect)


def test_the_charts_of_one_draw_share_their_runs_and_each_gets_its_own_columns() -> None:
    rnd = random.Random(25)
    for _ in range(3000):
        width = rnd.choice([0.25, 1.0, 1.1 ** rnd.randint(-5, 30), 3.7])
        anchor = rnd.uniform(0, 1e5)
        n = rnd.randint(0, 40)
        if rnd.random() < 0.7:
            times = sorted(rnd.uniform(-width * 60, width * 2) for _ in range(n))
        else:  # bunched at both edges: the clamped runs meet the first and last columns
            edges = (-width * 70, -width * 3, 0.0, width * 1.5)
            times = sorted(rnd.choice(edges) + rnd.uniform(-1, 1) * width for _ in range(n))
        connect = [rnd.random() < 0.8 for _ in range(n)]
        for dots_w in rnd.sample(range(2, 60), 3):  # one draw: three widths, one times
            want = _runs_point_by_point(times, connect, width, dots_w, anchor)
            assert runs_for(times, connect, width, dots_w, anchor) == want
