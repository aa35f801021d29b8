"""The braille charts' scales: round y ticks, axis units, and where each point falls.

Points are grouped by dot column (each column shows its points' range), so a chart's cost
follows its width more than the history's length. An anchored chart's columns hold fixed slices
of time (:func:`anchored_column`), so between two column steps only the newest column changes.
The five charts of a draw share one list of times, so the last few groupings are kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.style import Style

from iotop_plus.text import plain_number, si_number

NICE_SECONDS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)


def nice_step(raw: float) -> float:
    """The smallest 1, 2 or 5 x 10^k at or above ``raw`` (> 0)."""
    exp = math.floor(math.log10(raw))
    base = 10.0**exp
    for m in (1, 2, 5, 10):
        if m * base >= raw * (1 - 1e-9):
            return m * base
    return 10 * base  # pragma: no cover (the loop always returns)


def nice_ticks(top_value: float, max_ticks: int) -> tuple[float, list[float]]:
    """Round ticks from 0 covering ``top_value``: (axis top, ticks), at most ``max_ticks``
    intervals of a 1-2-5 step. An all-zero series gets 0..1."""
    if not top_value > 0 or math.isinf(top_value):
        top_value = 1.0
    step = nice_step(top_value / max(max_ticks, 1))
    n = max(1, math.ceil(top_value / step - 1e-9))
    return n * step, [i * step for i in range(n + 1)]


@dataclass(frozen=True)
class YAxis:
    """How one chart's values are scaled and labelled."""

    unit: str
    """Unit shown in the title (e.g. ``MiB/s``)."""
    divisor: float
    """Values are divided by this before the ticks are chosen (KiB/s shown as MiB/s)."""
    label: Callable[[float], str]
    """A tick's text."""


def y_axis_for(kind: str, top_value: float) -> YAxis:
    """The axis of a chart of ``kind`` (iops, kib, ms, req, pct) whose largest value is
    ``top_value``."""
    if kind == "kib":
        for div, unit in ((1024.0**2, "GiB/s"), (1024.0, "MiB/s")):
            if top_value >= div:
                return YAxis(unit, div, plain_number)
        return YAxis("KiB/s", 1.0, plain_number)
    if kind == "iops":
        return YAxis("", 1.0, si_number)
    return YAxis({"ms": "ms", "pct": "%"}.get(kind, ""), 1.0, plain_number)


@dataclass(frozen=True)
class Line:
    """One series of a chart."""

    label: str
    """Legend text."""
    style: Style
    """Its colour."""
    values: Sequence[float]
    """One value per timestamp of the chart."""
    short: str = ""
    """A shorter legend text for narrow charts (``r``, ``w``)."""
    times: Sequence[float] | None = None
    """This series' own timestamps (seconds relative to the end, all <= 0), for series sampled
    apart (the fleet's range queries); None: the chart's."""
    connect: Sequence[bool] = ()
    """With :attr:`times`: whether each point is joined to the one before it."""


def columns(cols: Sequence[int], connect: Sequence[bool]) -> list[tuple[int, int, int, bool]]:
    """The runs of points that fall in one dot column: (column, first index, end index,
    joined to the run before). ``cols`` must not decrease (points are in time order)."""
    runs: list[tuple[int, int, int, bool]] = []
    start = 0
    n = len(cols)
    for i in range(1, n + 1):
        if i == n or cols[i] != cols[start]:
            runs.append((cols[start], start, i, bool(connect[start]) and start > 0))
            start = i
    return runs


RunList = list[tuple[int, int, int, bool]]
"""Dot-column runs: (column, first index, end index, joined to the run before)."""

_RUNS_CACHE: dict[tuple[int, int, float, int, float | None], tuple[object, RunList]] = {}

COLUMN_RATIO = 1.1
"""Anchored charts: a dot column's width in seconds is a power of this, at or above what the
window needs, so it stays the same from frame to frame (see :func:`column_seconds`)."""


def column_seconds(span: float, dots_w: int, was: float | None = None) -> float:
    """The seconds one dot column covers in an anchored chart of ``dots_w`` dot columns over
    ``span`` seconds: the previous width ``was`` while the window fits in it and fills at least
    four fifths of it (a window that jitters keeps its columns), else the smallest power of
    :data:`COLUMN_RATIO` that fits."""
    need = span / max(dots_w - 1, 1)
    if was is not None and need <= was <= need * 1.25:
        return was
    return float(COLUMN_RATIO ** math.ceil(math.log(max(need, 1e-9), COLUMN_RATIO) - 1e-9))


def anchored_column(stamp: float, end: float, width: float, last: int) -> int:
    """The dot column of time ``stamp`` in an anchored chart ending at ``end`` (column
    ``last``): columns hold fixed slices of time (multiples of ``width`` seconds), so a
    column's points stay in it as the window moves and the picture shifts by whole columns."""
    return last - (math.floor(end / width) - math.floor(stamp / width))


def runs_for(
    times: Sequence[float],
    connect: Sequence[bool],
    span: float,
    dots_w: int,
    anchor: float | None = None,
) -> list[tuple[int, int, int, bool]]:
    """The dot-column runs of ``times``; the five charts of a draw share one ``times``, and
    mostly one width, so the last few results are kept. With an ``anchor`` (the absolute time
    of the window's end), ``span`` is the width of a column (:func:`anchored_column`)."""
    key = (id(times), len(times), span, dots_w, anchor)
    hit = _RUNS_CACHE.get(key)
    if hit is not None and hit[0] is times:
        return hit[1]
    xs = (dots_w - 1) / span
    last = dots_w - 1
    if anchor is not None:
        runs = shifted_runs(slice_runs(times, connect, span, anchor), last, anchor, span)
    else:
        # times lie in [-span, 0]: only float rounding can step outside, and min/max catch it.
        cols = [int((span + t) * xs + 0.5) for t in times]
        if cols and (cols[0] < 0 or cols[-1] > last):
            cols = [min(last, max(0, c)) for c in cols]
        runs = columns(cols, connect)
    if len(_RUNS_CACHE) >= 4:
        _RUNS_CACHE.clear()
    _RUNS_CACHE[key] = (times, runs)
    return runs


_SLICES_CACHE: dict[tuple[int, int, float, float], tuple[object, RunList]] = {}


def slice_runs(
    times: Sequence[float], connect: Sequence[bool], width: float, anchor: float
) -> RunList:
    """The runs of ``times`` (relative to ``anchor``) by the slice of time each point falls in
    (``floor(stamp / width)``), for every chart of one draw: the charts' widths differ, and
    mostly not their column widths, and a run of points in one slice is a run of one column
    at any width (a chart's columns are its slices shifted)."""
    key = (id(times), len(times), width, anchor)
    hit = _SLICES_CACHE.get(key)
    if hit is not None and hit[0] is times:
        return hit[1]
    floor = math.floor
    runs = columns([floor((anchor + t) / width) for t in times], connect)
    if len(_SLICES_CACHE) >= 4:
        _SLICES_CACHE.clear()
    _SLICES_CACHE[key] = (times, runs)
    return runs


def shifted_runs(slices: RunList, last: int, anchor: float, width: float) -> RunList:
    """The runs by slice placed in a chart whose last column (``last``) holds the slice of
    ``anchor``. Runs left of the first column (or, by rounding, right of the last) are clamped
    to it and become one run there with the run already in it, as :func:`columns` groups the
    points' clamped columns."""
    shift = last - math.floor(anchor / width)
    runs = [(k + shift, start, end, joined) for k, start, end, joined in slices]
    if not runs or (runs[0][0] >= 0 and runs[-1][0] <= last):
        return runs
    merged: RunList = []
    for col, start, end, joined in runs:
        col = min(last, max(0, col))
        if merged and merged[-1][0] == col:  # only at the edges: slices differ inside
            merged[-1] = (col, merged[-1][1], end, merged[-1][3])
        else:
            merged.append((col, start, end, joined))
    return merged
