"""Charts of the selected device's recent history, as braille line charts.

The charts draw only the selected device, only when on screen and only when a new point
arrived (at the pace of the table). They draw the points the history holds and nothing
else: the x axis is the window the history covers (at least :func:`min_span`), a device
that appeared later starts where its data starts, and samples that are missing are not
bridged by a line.

Setting changes and probes are marked with a vertical line and a short label above the plot,
live and in history (where the window ends at the frame shown, and its time is in the
caption).

The five charts and their caption are one widget, laid out as a 3x2 grid of pictures
(:class:`~iotop_plus.tui.widgets.braille_chart.ChartPicture`) it draws into its own lines:
Textual's paint cost follows the number of widgets on screen. Only the lines a draw changed
are painted again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise, zip_longest

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.sampling.disks.figures import figure
from iotop_plus.sampling.store.timeline import Columns, Mark
from iotop_plus.text import printable
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.widgets.braille_chart import ChartPicture
from iotop_plus.tui.widgets.chart_scale import Line
from iotop_plus.tui.widgets.line_regions import line_regions
from iotop_plus.tui.widgets.plain_lines import plain_lines
from iotop_plus.tui.widgets.style_memo import StyleMemo

SHORT = {"r_s": "r", "w_s": "w", "rkb_s": "read", "wkb_s": "write", "r_await": "r", "w_await": "w"}
"""Legend text for narrow charts."""
LEGEND = {"rkb_s": "read", "wkb_s": "write"}
"""Legend text where the iostat title would name another unit than the axis (rkB/s on a
MiB/s axis)."""
READ_STYLE = Style(color="#5fafff")
"""The first series of a chart (reads, aqu-sz, %util)."""
WRITE_STYLE = Style(color="#ffaf00")
"""The second series (writes, in-flight)."""
MIN_SPAN_INTERVALS = 30
"""The x axis covers at least this many sampling intervals, ..."""
MIN_SPAN_S = 120.0
"""... and at least this many seconds (within the history's window): the first points of a
start appear at the right, with the empty time before them left empty, as on a chart of the
last few minutes. A window a plot's width in dot columns or shorter moves the picture on by
a dot column or more at every frame, and every row with dots is drawn and painted again: over
30 s at 1 s a frame's draw cost ~1.6 times as much while it lasted, ~8 % of the TUI's CPU
(``benchmarks/bench_chart_frames.py``); over 2 minutes a dot column holds ~3 s at 120x36
and the picture moves every third frame."""


def min_span(interval: float, window: float) -> float:
    """The shortest x axis, in seconds, at ``interval`` seconds between frames, for a history
    of ``window`` seconds."""
    return min(window, max(MIN_SPAN_INTERVALS * interval, MIN_SPAN_S))


GUTTER = 1
"""Blank cells after each chart but the last of a grid row: a plot's last column never touches
the y labels of the chart beside it."""
GAP = 2.5
"""Two points further apart than this many times their neighbours' spacing are not joined
(the device had no rates in between)."""


@dataclass(frozen=True)
class ChartSpec:
    """One plot: which history series it draws, and how they are labelled."""

    id: str
    """The chart's name (:meth:`DeviceCharts.picture`)."""
    title: str
    """Plot title, with the unit."""
    metrics: tuple[str, ...]
    """DeviceRates attributes drawn; the legend shows their iostat titles."""
    kind: str = ""
    """Axis kind (units and tick labels): iops, kib, ms, req or pct."""

    @cached_property
    def series(self) -> tuple[tuple[str, str], ...]:
        """(metric, legend label) pairs."""
        return tuple((m, figure(m).title) for m in self.metrics)


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("chart-iops", "IOPS", ("r_s", "w_s"), "iops"),
    ChartSpec("chart-throughput", "", ("rkb_s", "wkb_s"), "kib"),
    ChartSpec("chart-await", "await", ("r_await", "w_await"), "ms"),
    ChartSpec("chart-queue", "queue", ("aqu_sz", "in_flight"), "req"),
    ChartSpec("chart-util", "%util", ("util",), "pct"),
)


def bucket_max(
    xs: Sequence[float], ys: Sequence[float], buckets: int
) -> tuple[list[float], list[float]]:
    """At most ``buckets`` points, each the maximum of its slice, so spikes stay visible."""
    n = len(xs)
    if n <= buckets or buckets <= 0:
        return list(xs), list(ys)
    out_x: list[float] = []
    out_y: list[float] = []
    step = n / buckets
    for b in range(buckets):
        lo, hi = int(b * step), max(int((b + 1) * step), int(b * step) + 1)
        out_x.append(xs[hi - 1])
        out_y.append(max(ys[lo:hi]))
    return out_x, out_y


def joins(times: Sequence[float]) -> list[bool]:
    """Whether each point is joined to the one before it: not across a gap in the samples
    (a spacing over ``GAP`` times the larger of its neighbours' spacings)."""
    n = len(times)
    if n < 3:
        return [False, True][:n]
    dts = [b - a for a, b in pairwise(times)]
    # Spacing i (before point i+1) against its neighbours i-1 and i+1.
    before = [0.0, *dts[:-1]]
    after = [*dts[1:], 0.0]
    return [False] + [
        dt <= GAP * (b if b > a else a) for dt, b, a in zip(dts, before, after, strict=True)
    ]


def split(total: int, parts: int) -> list[tuple[int, int]]:
    """(offset, length) of ``parts`` equal shares of ``total`` cells, as Textual's grid
    divides ``1fr`` tracks (the rounding goes to the later shares)."""
    edges = [k * total // parts for k in range(parts + 1)]
    return [(a, b - a) for a, b in pairwise(edges)]


def _joined(pieces: Sequence[Strip], cells: Sequence[Region], width: int) -> Strip:
    """A grid row's lines side by side, with the blank cells between their cells, as one
    strip (each piece is its cell's width)."""
    segments: list[Segment] = []
    for k, piece in enumerate(pieces):
        segments.extend(piece)
        gap = cells[k + 1].x - cells[k].right if k + 1 < len(cells) else 0
        if gap > 0:
            segments.append(Segment(" " * gap))
    return Strip(segments, width)


class CaptionLines:
    """The caption's lines (device, sample count, what the axes mean), wrapped at a width
    with a cell of padding on each side. Its sample count moves every frame until the
    history is full: a paragraph wrapped at the last call is not wrapped again."""

    def __init__(self) -> None:
        self.text = ""
        self._paragraphs: dict[str, list[Strip]] = {}
        """The paragraphs of the last text, wrapped, ..."""
        self._wrapped_as: tuple[int, Style] | None = None
        """... at this width and style."""

    def strips(self, app: App[object], width: int, height: int, style: Style) -> list[Strip]:
        """The lines at ``width`` x ``height`` cells in ``style``."""
        inner = width - 2
        if inner <= 0 or height <= 0:
            return [Strip.blank(width, style)] * max(height, 0)
        console = app.console
        kept = self._paragraphs if self._wrapped_as == (inner, style) else {}
        paragraphs: dict[str, list[Strip]] = {}
        lines: list[Strip] = []
        pad = Segment(" ", style)
        for paragraph in self.text.split("\n"):  # rich wraps each paragraph on its own too
            strips = paragraphs.get(paragraph) or kept.get(paragraph)
            if (
                strips is None
                and paragraph
                and "\t" not in paragraph
                and cell_len(paragraph) <= inner
            ):
                # A paragraph that fits is one line as it is (what rich's wrap gives): the
                # sample count changes every frame until the history is full.
                rest = Segment(" " * (width - 1 - cell_len(paragraph)), style)
                strips = [Strip([pad, Segment(paragraph, style), rest], width)]
            if strips is None:
                strips = [
                    Strip(
                        [pad, *Strip(list(line.render(console))).apply_style(style), pad]
                    ).crop_extend(0, width, style)
                    for line in Text(paragraph).wrap(console, inner)
                ]
            paragraphs[paragraph] = strips
            lines.extend(strips)
        self._paragraphs, self._wrapped_as = paragraphs, (inner, style)
        blank = Strip.blank(width, style)
        return (lines + [blank] * height)[:height]


class DeviceCharts(BatchedRepaint, StyleMemo, Widget):
    """Five small charts of the selected device, seconds before now on the x axis, and the
    caption, in a grid of three columns and two rows, under a rule line (drawn unless its
    component style hides it: ``display: none`` on ``device-charts--rule``)."""

    DEFAULT_CSS = """
    DeviceCharts { height: 1fr; }
    """

    COMPONENT_CLASSES = {"device-charts--caption", "device-charts--rule"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.device: str | None = None
        """The device drawn."""
        self.draws = 0
        """How many times the charts were drawn (tests and benchmarks read it)."""
        self._last_draw = float("-inf")
        self.marks_drawn: list[Mark] = []
        """The marks on the charts at the last draw (tests read it)."""
        self.pictures = {spec.id: ChartPicture(spec.kind, spec.title) for spec in CHARTS}
        """The charts by name, in :data:`CHARTS` order."""
        self._caption_lines = CaptionLines()
        self._caption_drawn: tuple[str, int, int, Style] | None = None
        self._caption_strips: list[Strip] = []
        self._lines: list[Strip] = []
        """The widget's lines at the last draw, ..."""
        self._parts: list[tuple[Strip, ...]] = []
        """... each joined from these cells' lines, ..."""
        self._built_for: tuple[int, int, bool] | None = None
        """... at this size, with or without the rule (None: not drawn yet)."""
        self._painting: tuple[int, int, bool] | None = None
        self._caption_joined: list[Strip] | None = None
        """The caption's lines at the last join."""

    @property
    def caption(self) -> str:
        """The caption's text."""
        return self._caption_lines.text

    def picture(self, chart_id: str) -> ChartPicture:
        """The chart ``chart_id`` of :data:`CHARTS` (``chart-iops``, ...)."""
        return self.pictures[chart_id]

    def _ruled(self) -> bool:
        return self.get_component_styles("device-charts--rule").display != "none"

    def _shape(self) -> tuple[int, int, bool]:
        size = self.size  # (worked out from the layout at each look)
        return size.width, size.height, self._ruled()

    def cells(self, width: int, height: int, ruled: bool | None = None) -> list[Region]:
        """Where the five charts and the caption are at ``width`` x ``height``, in
        :data:`CHARTS` order, the caption last (under the rule, if it is drawn)."""
        top = int(self._ruled() if ruled is None else ruled)
        rows, cols = split(max(height - top, 0), 2), split(width, 3)
        cols = [(x, w - GUTTER if k < 2 and w > GUTTER else w) for k, (x, w) in enumerate(cols)]
        return [Region(x, top + y, w, h) for y, h in rows for x, w in cols]

    def chart_text(self, chart_id: str) -> list[str]:
        """What chart ``chart_id`` shows, line by line (tests read it)."""
        width, height, ruled = self._shape()
        cell = self.cells(width, height, ruled)[list(self.pictures).index(chart_id)]
        return [
            self._line(y, (width, height, ruled)).crop(cell.x, cell.right).text
            for y in cell.line_range
        ]

    def _caption(self, text: str) -> None:
        """Show ``text`` under the charts (drawn with them)."""
        self._caption_lines.text = text

    def _caption_part(self, width: int, height: int) -> list[Strip]:
        style = self.component_style("device-charts--caption")
        key = (self._caption_lines.text, width, height, style)
        if key != self._caption_drawn:
            self._caption_drawn = key
            self._caption_strips = self._caption_lines.strips(self.app, width, height, style)
        return self._caption_strips

    def _join_lines(
        self, layout: tuple[int, int, bool], dirty: set[int] | None = None
    ) -> list[Strip]:
        """The widget's lines: the rule, then each line the cells' lines of its grid row side
        by side; a line whose cells' lines did not change is the one drawn last time.
        ``dirty``: the only lines of the charts (not the caption's) whose cells' lines may
        have changed since the last join at this layout (None: any)."""
        width, height, ruled = layout
        cells = self.cells(width, height, ruled)
        drawn = [
            picture.strips(cell.width, cell.height)
            for picture, cell in zip(self.pictures.values(), cells, strict=False)
        ]
        caption = self._caption_part(cells[-1].width, cells[-1].height)
        drawn.append(caption)
        old_parts = self._parts if self._built_for == layout else []
        if dirty is not None and old_parts:
            if caption is not self._caption_joined:
                dirty = dirty | set(cells[-1].line_range)
            ys: Iterable[int] = sorted(dirty)
            lines, parts = list(self._lines), list(old_parts)
        else:
            top = int(ruled)
            ys = range(top, top + cells[0].height + cells[3].height)
            lines, parts = [], []
            if ruled and height:
                style = self.component_style("device-charts--rule")
                rule = Strip([Segment("─" * width, style)], width)
                if old_parts and old_parts[0] == (rule,):
                    rule = self._lines[0]  # drawn as it was: not painted again
                lines.append(rule)
                parts.append((rule,))
        self._caption_joined = caption
        for y in ys:
            grid_row = 0 if y < cells[3].y else 3  # the first cell of the line's grid row
            row_cells = cells[grid_row : grid_row + 3]
            dy = y - row_cells[0].y
            pieces = tuple(
                drawn[grid_row + k][dy] if dy < len(drawn[grid_row + k]) else Strip.blank(c.width)
                for k, c in enumerate(row_cells)
            )
            was = old_parts[y] if y < len(old_parts) else None
            if was is not None and all(a is b or a == b for a, b in zip(was, pieces, strict=True)):
                line, pieces = self._lines[y], was  # drawn as it was: not painted again
            else:
                line = _joined(pieces, row_cells, width)
            if y < len(lines):
                lines[y], parts[y] = line, pieces
            else:
                lines.append(line)
                parts.append(pieces)
        self._parts = parts
        return lines

    def repaint(self) -> None:
        """Draw the lines now and paint again only those that changed."""
        layout = self._shape()
        if self._built_for != layout or not self._lines:
            self._built_for = None
            self.refresh()  # drawn whole at the next paint
            return
        dirty: set[int] | None = set()
        for picture, cell in zip(self.pictures.values(), self.cells(*layout), strict=False):
            rows = picture.redraw(cell.width, cell.height)
            if rows is None or dirty is None:
                dirty = None  # drawn whole: any of its lines may differ
            else:
                dirty.update(cell.y + row for row in rows)
        old, self._lines = self._lines, self._join_lines(layout, dirty)
        changed = [y for y, (a, b) in enumerate(zip_longest(old, self._lines)) if a is not b]
        if changed:
            self.refresh(*line_regions(changed, layout[0]))

    def _line(self, y: int, layout: tuple[int, int, bool]) -> Strip:
        if self._built_for != layout:
            self._lines = self._join_lines(layout)
            self._built_for = layout
        return self._lines[y] if y < len(self._lines) else Strip.blank(layout[0])

    def render_lines(self, crop: Region) -> list[Strip]:
        """The charts' own strips where the widget's styles add nothing (:mod:`.plain_lines`),
        else Textual's; with the widget's size looked up once for all the lines painted."""
        self._painting = layout = self._shape()
        try:
            lines = plain_lines(self, crop, layout[0], self.render_line)
            return super().render_lines(crop) if lines is None else lines
        finally:
            self._painting = None

    def render_line(self, y: int) -> Strip:
        return self._line(y, self._painting or self._shape())

    def due(self, device: str | None, now: float) -> bool:
        """Whether a draw is worth doing: a new device, or another end time than the last draw
        (a newer point live; any other frame when scrubbing through history)."""
        return device != self.device or now != self._last_draw

    def draw(
        self,
        device: str | None,
        history: Columns | None,
        marks: Iterable[Mark],
        now: float,
        *,
        at: str | None = None,
        start: float | None = None,
        min_span: float = 0.0,
    ) -> None:
        """Draw ``device``'s history; x is seconds relative to ``now``.

        Args:
            device: The device drawn.
            history: Its figures (wall times, as ``now`` and the marks).
            marks: Setting changes, probes, writeback crossings, I/O errors, clock steps.
            now: The end of the window: the wall time of the frame shown (live or not).
            at: That frame's time for the caption, when scrubbed (None: live).
            start: Where the window starts (the oldest sample of any device), so a device
                that appeared later starts mid-chart; None: at this device's first sample.
            min_span: The window is at least this long (seconds).
        """
        self.device = device
        self._last_draw = now
        self.draws += 1
        if device is None or history is None or len(history) == 0:
            self._caption(f"{printable(device or 'no device')}: no history yet")
        else:
            before = f"seconds before {at}" if at else "seconds before now"
            self._caption(
                f"{printable(device)}: {len(history)} samples\n"
                f"x axis: {before}\nmarks: settings, probes, writeback, errors"
            )
        stamps = history.walls if history is not None else []
        first = stamps[0] if stamps else now
        begin = min(first, start) if start is not None else first
        span = max(now - begin, min_span, 1e-9)
        times = [t - now for t in stamps]
        self.marks_drawn = [
            m
            for m in marks
            if (m.device is None or m.device == device)
            and times
            and now - span <= m.timestamp
            and (at is None or m.timestamp <= now)  # scrubbed: nothing after the frame shown
        ]
        placed = [(m.timestamp - now, printable(m.label)) for m in self.marks_drawn]
        connect = joins(times)
        styles = (READ_STYLE, WRITE_STYLE)
        for spec, picture in zip(CHARTS, self.pictures.values(), strict=True):
            lines = (
                [
                    Line(
                        LEGEND.get(metric, label),
                        styles[i],
                        history.figures[metric],
                        SHORT.get(metric, ""),
                    )
                    for i, (metric, label) in enumerate(spec.series)
                ]
                if history is not None and times
                else []
            )
            picture.set_data(times, connect, lines, span, placed, "0" if at else "now", now)
        self.repaint()
