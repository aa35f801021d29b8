"""A small braille line chart drawn straight into Strips (Textual's Line API).

Each cell holds a 2x4-dot braille character, so a 30x8-cell plot has 60x32 dots. Drawn
straight into strips, the five device charts cost a small part of plotext's build plus
``Text.from_ansi`` on the same data (``benchmarks/bench_charts.py``; figures in
docs/performance.md). Points are first grouped by dot column (each column shows
its points' range), so the cost follows the chart's width more than the history's length.
An anchored chart moves its last picture on and draws only the runs that changed
(:mod:`~iotop_plus.tui.widgets.braille_raster`).

:class:`ChartPicture` draws a chart's lines at a given size and is no widget: the main
screen's five charts are pictures inside one widget (:mod:`~iotop_plus.tui.widgets.charts`),
as Textual's paint cost follows the number of widgets on screen. :class:`BrailleChart` is one
picture as a widget of its own (the fleet view's charts).

Layout, top to bottom: the title and legend, a row for the labels of marks (so they never
cover the legend), the plot with round y ticks on the left, and the x axis (seconds before
the end of the window). Every line is cut to the widget's width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import zip_longest

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.text import ago
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.widgets.braille_raster import LineRaster, raster
from iotop_plus.tui.widgets.chart_scale import (
    NICE_SECONDS,
    Line,
    YAxis,
    anchored_column,
    column_seconds,
    nice_ticks,
    runs_for,
    y_axis_for,
)
from iotop_plus.tui.widgets.line_regions import line_regions
from iotop_plus.tui.widgets.plain_lines import plain_lines

_BRAILLE = 0x2800

TITLE_STYLE = Style(bold=True)
AXIS_STYLE = Style(dim=True)
MARK_STYLE = Style(color="#e070e0")


class ChartPicture:
    """One line chart's lines: title and legend, mark labels, the plot with y ticks, the x
    axis; drawn at the size asked for, keeping what did not change since the last draw."""

    def __init__(self, kind: str, title: str) -> None:
        self.kind = kind
        """Axis kind: iops, kib, ms, req or pct."""
        self.title = title
        """What the chart shows (the unit is added)."""
        self.lines: list[Line] = []
        self.times: Sequence[float] = ()
        self.connect: Sequence[bool] = ()
        self.span = 60.0
        self.end_label = "now"
        self.marks: list[tuple[float, str]] = []
        self.end_time: float | None = None
        """The absolute time of the window's end, for anchored columns (None: the points are
        placed by their exact time, and every point moves as the window does)."""
        self._column_s: tuple[int, float] | None = None
        self.ticks: list[str] = []
        """The y tick labels of the last render, bottom to top (tests read them)."""
        self._strips: list[Strip] = []
        self._built_for: tuple[int, int] | None = None
        self._kept: dict[str, tuple[object, Strip]] = {}
        """The legend, marks row and x axis of the last build, each with what it was drawn
        from: a frame mostly draws them again from the same inputs."""
        self._rows: list[tuple[object, Strip]] = []
        """The plot rows of the last build, each with what it was drawn from (its tick and
        cells): between two column steps a new point changes a row or two."""
        self._rasters: list[LineRaster] = []
        """Each line's bits of the last build, moved on at the next (anchored charts)."""
        self._end_column: int | None = None
        """The anchored column of the window's end at the last build."""
        self._scale: (
            tuple[tuple[float, int], tuple[YAxis, float, list[str], dict[int, str]]] | None
        ) = None
        """The y scale of the last build, with the largest value and the rows it is for."""

    def set_data(
        self,
        times: Sequence[float],
        connect: Sequence[bool],
        lines: Sequence[Line],
        span: float,
        marks: Sequence[tuple[float, str]] = (),
        end_label: str = "now",
        anchor: float | None = None,
    ) -> None:
        """What to draw next: ``lines`` over ``times`` (seconds relative to the end, all <= 0)
        on an x axis from ``-span`` to 0, with ``marks`` (relative time, label).

        With ``anchor``, the absolute time of the end, each dot column holds a fixed
        slice of time: between two column steps only the newest column changes, so only the
        lines it touches change; the x axis covers up to a tenth more than ``span`` (a
        quarter while a shorter window keeps the last width, see
        :func:`~iotop_plus.tui.widgets.chart_scale.column_seconds`). Lines with their own
        ``times`` need no anchor.
        """
        self.times, self.connect, self.lines = times, connect, list(lines)
        self.end_time = anchor
        self.span = max(span, 1e-9)
        self.marks = list(marks)
        self.end_label = end_label

    def redraw(self, width: int, height: int) -> list[int] | None:
        """Draw the lines at ``width`` x ``height`` now, after :meth:`set_data`: the rows that
        changed since the last draw, or None when there was none at this size (all of them)."""
        if self._built_for != (width, height) or not self._strips:
            self._built_for = None  # drawn whole when the lines are asked for
            return None
        old, self._strips = self._strips, self.build(width, height)
        return [
            y
            for y, (was, now) in enumerate(zip_longest(old, self._strips))
            if was is not now and was != now
        ]

    def strips(self, width: int, height: int) -> list[Strip]:
        """The lines at ``width`` x ``height``, drawn if they were not at this size."""
        if self._built_for != (width, height):
            self._strips = self.build(width, height)
            self._built_for = (width, height)
        return self._strips

    # ---- drawing ------------------------------------------------------------------------

    def build(self, width: int, height: int) -> list[Strip]:
        """Every line of the chart at ``width`` x ``height`` cells."""
        if width <= 0 or height <= 0:
            return []
        top_value = max((max(line.values, default=0.0) for line in self.lines), default=0.0)
        has_marks_row = height >= 6
        has_x_row = height >= 4
        plot_h = max(1, height - 1 - has_marks_row - has_x_row)
        axis, top, labels, tick_at = self._y_scale(top_value, plot_h)
        self.ticks = labels
        label_w = max(cell_len(s) for s in labels)
        plot_w = max(1, width - label_w - 1)
        dots_w, dots_h = plot_w * 2, plot_h * 4
        span, column = self.span, None
        if self.end_time is not None:
            column = column_seconds(span, dots_w, self._column_width(dots_w))
            self._column_s = (dots_w, column)
            span = column * (dots_w - 1)

        # Legend first, so nothing can cover it.
        legend_key = (
            self.title,
            axis.unit,
            width,
            [(x.label, x.short, x.style) for x in self.lines],
        )
        out: list[Strip] = [
            self._kept_strip("legend", legend_key, lambda: self._legend(axis.unit, width), width)
        ]
        layers = self._layers(plot_w, plot_h, dots_w, dots_h, top * axis.divisor, column)
        styles = tuple(style for _, style in layers)
        mark_cols = [
            (min(dots_w - 1, max(0, self._mark_column(t, span, dots_w, column))) >> 1, s)
            for t, s in self.marks
            if -span <= t <= 0
        ]
        if has_marks_row:
            out.append(
                self._kept_strip(
                    "marks",
                    (mark_cols, label_w, plot_w, width),
                    lambda: self._mark_labels(mark_cols, label_w + 1, plot_w, width),
                    width,
                )
            )
        mark_set = {c for c, _ in mark_cols}
        marks_key = tuple(sorted(mark_set))
        exact = label_w + 1 + plot_w == width  # the rows fill the width: no crop, no padding
        rows_kept, self._rows = self._rows, []
        for row in range(plot_h):
            tick = tick_at.get(row)
            base = row * plot_w
            key = (
                tick,
                label_w,
                plot_w,
                width,
                marks_key,
                styles,
                [bits[base : base + plot_w] for bits, _ in layers],
            )
            kept = rows_kept[row] if row < len(rows_kept) else None
            if kept is not None and kept[0] == key:
                strip = kept[1]  # most rows do not change from one frame to the next
            else:
                segs = [
                    Segment((tick or "").rjust(label_w), AXIS_STYLE),
                    Segment("┤" if tick is not None else "│", AXIS_STYLE),
                ]
                segs.extend(self._plot_row(layers, row, plot_w, mark_set))
                strip = Strip(segs, width) if exact else Strip(segs).crop(0, width)
                strip = strip.extend_cell_length(width)
            self._rows.append((key, strip))
            out.append(strip)
        if has_x_row:
            out.append(
                self._kept_strip(
                    "x",
                    (label_w, plot_w, width, span, self.end_label),
                    lambda: self._x_axis(label_w, plot_w, width, span),
                    width,
                )
            )
        return out[:height]  # each part is ``width`` cells already

    def _y_scale(
        self, top_value: float, plot_h: int
    ) -> tuple[YAxis, float, list[str], dict[int, str]]:
        """The y axis for a largest value of ``top_value`` on ``plot_h`` rows: (axis, its top
        in the axis' unit, the ticks' labels, each label by the row it is on). The
        same as the last build's while the largest value is (most frames)."""
        kept = self._scale
        if kept is not None and kept[0] == (top_value, plot_h):
            return kept[1]
        axis = y_axis_for(self.kind, top_value)
        top, ticks = nice_ticks(top_value / axis.divisor, max(1, plot_h // 2))
        labels = [axis.label(t) for t in ticks]
        # Tick rows: each tick on the cell row nearest its value.
        tick_at: dict[int, str] = {}
        for value, label in zip(ticks, labels, strict=True):
            row = plot_h - 1 - round(value / top * (plot_h - 1)) if plot_h > 1 else 0
            tick_at.setdefault(row, label)
        scale = (axis, top, labels, tick_at)
        self._scale = ((top_value, plot_h), scale)
        return scale

    def _kept_strip(self, part: str, key: object, draw: Callable[[], Strip], width: int) -> Strip:
        """The strip of ``part`` drawn from ``key`` (what it shows): the last one when it was
        drawn from an equal key, else a new one from ``draw()``."""
        kept = self._kept.get(part)
        if kept is not None and kept[0] == key:
            return kept[1]
        strip = draw().extend_cell_length(width)
        self._kept[part] = (key, strip)
        return strip

    def _column_width(self, dots_w: int) -> float | None:
        """The anchored column width of the last build at this many dot columns."""
        was = self._column_s
        return was[1] if was is not None and was[0] == dots_w else None

    def _mark_column(self, t: float, span: float, dots_w: int, column: float | None) -> int:
        """The dot column of a mark ``t`` seconds before the end."""
        if column is not None and self.end_time is not None:
            return anchored_column(self.end_time + t, self.end_time, column, dots_w - 1)
        return round((span + t) / span * (dots_w - 1))

    def _layers(
        self,
        plot_w: int,
        plot_h: int,
        dots_w: int,
        dots_h: int,
        top: float,
        column: float | None = None,
    ) -> list[tuple[bytearray, Style]]:
        """Each line's braille bits per cell (``plot_w`` x ``plot_h``) and its style, in the
        lines' order. ``column``: the anchored column width (seconds), if any."""
        if not self.times and all(line.times is None for line in self.lines):
            return []
        shared = (
            runs_for(self.times, self.connect, column, dots_w, self.end_time)
            if self.times and column is not None
            else runs_for(self.times, self.connect, self.span, dots_w)
            if self.times
            else []
        )
        ys = (dots_h - 1) / top if top > 0 else 0.0
        bottom = dots_h - 1

        def to_row(v: float) -> int:
            r = bottom - int(v * ys + 0.5)
            return bottom if r > bottom else 0 if r < 0 else r

        # Anchored: how many dot columns the window moved since the last build.
        moved = None
        end_column = None
        if column is not None and self.end_time is not None:
            end_column = math.floor(self.end_time / column)
            if self._end_column is not None and 0 <= end_column - self._end_column < dots_w:
                moved = end_column - self._end_column
        self._end_column = end_column
        key = (plot_w, plot_h, top, column)
        while len(self._rasters) < len(self.lines):
            self._rasters.append(LineRaster())
        layers: list[tuple[bytearray, Style]] = []
        for line, kept in zip(self.lines, self._rasters, strict=False):
            if line.times is None:
                bits = kept.draw(key, moved, shared, line.values, to_row, plot_w, plot_h)
            else:
                runs = runs_for(line.times, line.connect, self.span, dots_w)
                bits = raster(runs, line.values, to_row, plot_w, plot_h)
            layers.append((bits, line.style))
        return layers

    def _plot_row(
        self, layers: list[tuple[bytearray, Style]], row: int, plot_w: int, marks: set[int]
    ) -> list[Segment]:
        """One plot row's segments: a cell shared by two lines takes the later one's colour."""
        segs: list[Segment] = []
        run: list[str] = []
        run_style: Style | None = None
        base = row * plot_w
        for col in range(plot_w):
            bits = 0
            style: Style | None = None
            for layer, layer_style in layers:
                b = layer[base + col]
                if b:
                    bits |= b
                    style = layer_style
            if bits:
                ch = chr(_BRAILLE | bits)
            elif col in marks:
                ch, style = "┊", MARK_STYLE
            else:
                ch, style = " ", None
            if style is not run_style and run:
                segs.append(Segment("".join(run), run_style))
                run = []
            run_style = style
            run.append(ch)
        if run:
            segs.append(Segment("".join(run), run_style))
        return segs

    def _legend(self, unit: str, width: int) -> Strip:
        title = f"{self.title} {unit}".strip() if unit and unit not in self.title else self.title
        # The widest legend that fits: "━━ r_await", then "━r_await", then "━r".
        for gap, mark, short in (("  ", "━━ ", False), (" ", "━", False), (" ", "━", True)):
            segs = [Segment(title, TITLE_STYLE)]
            for line in self.lines:
                text = line.short or line.label if short else line.label
                segs += [Segment(gap), Segment(mark, line.style), Segment(text, line.style)]
            strip = Strip(segs)
            if strip.cell_length <= width:
                break
        return strip.crop(0, width)

    def _mark_labels(
        self, mark_cols: list[tuple[int, str]], offset: int, plot_w: int, width: int
    ) -> Strip:
        """The marks' labels over their lines, newest first; one that would overlap a newer
        one is left out (its line stays)."""
        row = [" "] * plot_w
        taken = [False] * plot_w
        for col, label in sorted(mark_cols, key=lambda m: -m[0]):
            text = label[: max(1, plot_w)]
            n = len(text)
            start = col if col + n <= plot_w else max(0, col - n + 1)
            if any(taken[start : start + n]):
                continue
            for i, ch in enumerate(text):
                row[start + i] = ch
                taken[start + i] = True
        return Strip([Segment(" " * offset), Segment("".join(row), MARK_STYLE)]).crop(0, width)

    def _x_axis(self, label_w: int, plot_w: int, width: int, span: float) -> Strip:
        """``-2m   -1m   now`` under the plot at round seconds (``span``: the axis' seconds)."""
        row = [" "] * plot_w
        end = self.end_label
        row[max(0, plot_w - len(end)) :] = list(end[-plot_w:])
        free_until = plot_w - len(end) - 1
        wanted = max(1, plot_w // 7)
        step = next((s for s in NICE_SECONDS if span / s <= wanted), NICE_SECONDS[-1])
        k = 1
        while k * step <= span:
            col = round((span - k * step) / span * (plot_w - 1)) if plot_w > 1 else 0
            text = ago(k * step)
            start = col - len(text) // 2
            start = max(0, start)
            if start + len(text) <= free_until:
                row[start : start + len(text)] = list(text)
                free_until = start - 1
            k += 1
        return Strip(
            [Segment(" " * label_w + "└", AXIS_STYLE), Segment("".join(row), AXIS_STYLE)]
        ).crop(0, width)


class BrailleChart(BatchedRepaint, ChartPicture, Widget):
    """One chart as a widget of its own."""

    DEFAULT_CSS = """
    BrailleChart { height: 1fr; min-height: 5; }
    """

    def __init__(self, kind: str, title: str, *, id: str | None = None) -> None:
        Widget.__init__(self, id=id)
        ChartPicture.__init__(self, kind, title)
        self._painting: tuple[int, int] | None = None

    def plot(
        self,
        times: Sequence[float],
        connect: Sequence[bool],
        lines: Sequence[Line],
        span: float,
        marks: Sequence[tuple[float, str]] = (),
        end_label: str = "now",
        anchor: float | None = None,
    ) -> None:
        """Show ``lines`` (:meth:`ChartPicture.set_data`): drawn now, and only the lines that
        changed are painted again (the legend, the marks row and the x axis mostly stay)."""
        self.set_data(times, connect, lines, span, marks, end_label, anchor)
        changed = self.redraw(self.size.width, self.size.height)
        if changed is None:
            self.refresh()
        elif changed:
            self.refresh(*line_regions(changed, self.size.width))

    def render_lines(self, crop: Region) -> list[Strip]:
        """The chart's own strips where its styles add nothing (:mod:`.plain_lines`), else
        Textual's; with the widget's size looked up once for all the lines painted
        (``Widget.size`` walks up to the screen)."""
        size = self.size
        self._painting = (size.width, size.height)
        try:
            lines = plain_lines(self, crop, size.width, self.render_line)
            return super().render_lines(crop) if lines is None else lines
        finally:
            self._painting = None

    def render_line(self, y: int) -> Strip:
        width, height = self._painting or (self.size.width, self.size.height)
        strips = self.strips(width, height)
        return strips[y] if y < len(strips) else Strip.blank(width)
