"""#25: an anchored chart moves its last picture on and draws only the runs that changed; the
picture is the one a chart drawn afresh shows, frame after frame."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from rich.style import Style
from textual.strip import Strip

from iotop_plus.tui.widgets import braille_raster
from iotop_plus.tui.widgets.braille_chart import BrailleChart
from iotop_plus.tui.widgets.braille_raster import DOTS, clear_columns, shifted
from iotop_plus.tui.widgets.chart_scale import Line
from iotop_plus.tui.widgets.charts import joins


def dots_of(bits: bytearray, width: int, height: int) -> set[tuple[int, int]]:
    """The (dot column, dot row) set in ``bits``."""
    return {
        (cell * 2 + half, row * 4 + k)
        for row in range(height)
        for cell in range(width)
        for half in (0, 1)
        for k in range(4)
        if bits[row * width + cell] & DOTS[half][k]
    }


def bits_of(dots: set[tuple[int, int]], width: int, height: int) -> bytearray:
    bits = bytearray(width * height)
    for x, y in dots:
        bits[(y >> 2) * width + (x >> 1)] |= DOTS[x & 1][y & 3]
    return bits


@pytest.mark.parametrize("by", [0, 1, 2, 3, 6, 7, 11, 12, 40])
def test_a_picture_moved_left_by_dot_columns(by: int) -> None:
    width, height = 6, 2
    rng = random.Random(by)
    dots = {(x, y) for x in range(width * 2) for y in range(height * 4) if rng.random() < 0.4}
    moved = shifted(bits_of(dots, width, height), width, height, by)
    assert dots_of(moved, width, height) == {(x - by, y) for x, y in dots if x >= by}


@pytest.mark.parametrize(("lo", "hi"), [(0, 11), (0, 0), (1, 1), (1, 4), (2, 9), (3, 3), (5, 2)])
def test_dot_columns_cleared(lo: int, hi: int) -> None:
    width, height = 6, 2
    dots = {(x, y) for x in range(width * 2) for y in range(height * 4)}
    bits = bits_of(dots, width, height)
    clear_columns(bits, width, height, lo, hi)
    assert dots_of(bits, width, height) == {(x, y) for x, y in dots if not lo <= x <= hi}


def _plot(chart: BrailleChart, stamps: list[float], series: list[list[float]], now: float) -> None:
    times = [t - now for t in stamps]
    chart.times, chart.connect = times, joins(times)
    chart.lines = [
        Line(f"l{i}", Style(color=f"color({i + 1})"), list(values))
        for i, values in enumerate(series)
    ]
    chart.span = max(now - stamps[0], 1e-9) if stamps else 1e-9
    chart.end_time = now
    chart.marks, chart.end_label = [], "now"


def _fresh(
    stamps: list[float],
    series: list[list[float]],
    now: float,
    size: tuple[int, int],
    was: tuple[int, float] | None,
) -> list[Strip]:
    """A new chart's picture, with the column width ``was`` the chart compared had kept."""
    chart = BrailleChart("iops", "fresh")
    chart._column_s = was
    _plot(chart, stamps, series, now)
    return chart.build(*size)


@pytest.mark.parametrize("seed", range(12))
def test_frame_after_frame_the_picture_is_a_fresh_charts(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Points come at a jittered interval (sometimes a gap, sometimes several at once), the
    oldest go once the history is full, values jump (the y scale changes now and then), another
    device's values come at the same times, and the window's column width changes as it grows:
    each build equals a fresh chart's."""
    rng = random.Random(seed)
    size = (rng.choice([20, 31, 44]), rng.choice([5, 9, 12]))
    capacity = rng.choice([30, 120, 600])
    chart = BrailleChart("iops", "fresh")
    stamps: list[float] = []
    series: list[list[float]] = [[], []]
    now = 1000.0 + rng.random()
    moved_on = 0
    real = braille_raster.LineRaster._moved_on

    def counted(self: braille_raster.LineRaster, *args: Any) -> bytearray | None:
        nonlocal moved_on
        bits = real(self, *args)
        moved_on += bits is not None
        return bits

    monkeypatch.setattr(braille_raster.LineRaster, "_moved_on", counted)
    level = 100.0
    for frame in range(260):
        for _ in range(rng.choice([1, 1, 1, 1, 2, 0])):
            now += rng.choice([1.0, 1.0, 0.98, 1.03, 0.25, 4.0])
            if rng.random() < 0.03:
                level = rng.choice([5.0, 100.0, 3000.0])
            stamps.append(now)
            for values in series:
                values.append(max(0.0, level * (0.5 + rng.random())))
        del stamps[:-capacity]
        for values in series:
            del values[:-capacity]
        if rng.random() < 0.04:  # another device chosen: other values at the same times
            series = [[v * rng.choice([0.5, 0.9, 1.1]) for v in values] for values in series]
        if not stamps:
            continue
        end = now + rng.choice([0.0, 0.0, 0.3])
        _plot(chart, stamps, series, end)
        was = chart._column_s
        got = chart.build(*size)
        assert got == _fresh(stamps, series, end, size, was), f"frame {frame}"
    assert moved_on > 100  # most frames moved the picture on instead of drawing it whole


def test_fewer_dot_rows_are_drawn_than_a_whole_picture_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chart = BrailleChart("iops", "fresh")
    stamps = [float(t) for t in range(400, 1000)]
    series = [[50 + 40 * math.sin(t / 7) for t in stamps]]
    _plot(chart, stamps, series, 999.5)
    chart.build(40, 10)
    drawn: list[int] = []
    real = braille_raster.vline

    def spy(bits: bytearray, width: int, col: int, r0: int, r1: int) -> None:
        drawn.append(col)
        real(bits, width, col, r0, r1)

    monkeypatch.setattr(braille_raster, "vline", spy)
    stamps = [*stamps[1:], 1000.0]
    series = [[*series[0][1:], 50.0]]
    _plot(chart, stamps, series, 1000.5)
    was = chart._column_s
    got = chart.build(40, 10)
    strokes = len(drawn)
    assert got == _fresh(stamps, series, 1000.5, (40, 10), was)
    assert len(drawn) > 60  # a fresh chart draws every column
    assert 0 < strokes <= 6  # the oldest column or two and the newest


def test_a_run_drawn_again_loses_the_dots_it_no_longer_has() -> None:
    """The newest column's points drawn again lower: its old dots go, not just the new ones
    added."""
    kept = braille_raster.LineRaster()
    runs = [(0, 0, 1, False), (1, 1, 2, True), (2, 2, 3, True), (3, 3, 4, True)]
    rows = {10.0: 0, 5.0: 4, 1.0: 7}.__getitem__
    key = (2, 2, 10.0, 1.0)
    kept.draw(key, None, runs, [1.0, 1.0, 1.0, 10.0], rows, 2, 2)
    again = list(runs)
    bits = kept.draw(key, 0, again, [1.0, 1.0, 1.0, 1.0], rows, 2, 2)
    assert bits == braille_raster.raster(again, [1.0, 1.0, 1.0, 1.0], rows, 2, 2)


def test_a_run_no_longer_joined_loses_its_joining_stroke() -> None:
    """The newest point was joined to the one before; with the point after it, it is not (a
    gap): the stroke that joined them goes."""
    kept = braille_raster.LineRaster()
    rows = {10.0: 0, 1.0: 7}.__getitem__
    key = (1, 2, 10.0, 1.0)
    kept.draw(key, None, [(0, 0, 1, False), (1, 1, 2, True)], [10.0, 1.0], rows, 1, 2)
    now = [(0, 0, 1, False), (1, 1, 2, False)]
    bits = kept.draw(key, 0, now, [10.0, 1.0], rows, 1, 2)
    assert bits == braille_raster.raster(now, [10.0, 1.0], rows, 1, 2)


def test_the_first_run_kept_is_joined_again_to_the_changed_run_before_it() -> None:
    """The runs from the second on are the same points, but the first changed, and so does
    the stroke that joins the second to it."""
    kept = braille_raster.LineRaster()
    rows = {10.0: 0, 1.0: 7}.__getitem__
    key = (2, 2, 10.0, 1.0)
    was = [(0, 0, 1, False), (1, 1, 2, True), (2, 2, 3, True)]
    kept.draw(key, None, was, [10.0, 1.0, 1.0], rows, 2, 2)
    now = [(0, 0, 2, False), (1, 2, 3, True), (2, 3, 4, True)]
    bits = kept.draw(key, 0, now, [1.0, 1.0, 1.0, 1.0], rows, 2, 2)
    assert bits == braille_raster.raster(now, [1.0, 1.0, 1.0, 1.0], rows, 2, 2)
