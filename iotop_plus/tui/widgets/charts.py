"""Charts of the selected device's recent history, as braille line charts.

The charts draw only the selected device, only when on screen and only when a new point
arrived (at the pace of the table). They draw the points the history holds and nothing
else: the x axis is the window the history covers (at least ``MIN_SPAN_INTERVALS`` sampling
intervals), a device that appeared later starts where its data starts, and samples that are
missing are not bridged by a line.

Setting changes and probes are marked with a vertical line and a short label above the plot,
live and in history (where the window ends at the frame shown, and its time is in the
caption).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise, zip_longest

from rich.style import Style
from rich.text import Text
from textual.containers import Grid
from textual.strip import Strip
from textual.widgets import Static

from iotop_plus.sampling.disks.figures import figure
from iotop_plus.sampling.store.timeline import Columns, Mark
from iotop_plus.text import printable
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.widgets.braille_chart import BrailleChart, Line
from iotop_plus.tui.widgets.line_regions import line_regions

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
"""The x axis covers at least this many sampling intervals: the first points of a start
appear at the right, with the empty time before them left empty."""
GAP = 2.5
"""Two points further apart than this many times their neighbours' spacing are not joined
(the device had no rates in between)."""


@dataclass(frozen=True)
class ChartSpec:
    """One plot: which history series it draws, and how they are labelled."""

    id: str
    """Widget id."""
    title: str
    """Plot title, with the unit."""
    metrics: tuple[str, ...]
    """DeviceRates attributes drawn; the legend shows their iostat titles."""
    kind: str = ""
    """Axis kind (units and tick labels): iops, kib, ms, req or pct."""

    @property
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


class ChartCaption(BatchedRepaint, Static):
    """The text under the charts (device, sample count, what the axes mean).

    Its sample count moves every frame until the history is full. Its lines are wrapped and
    rendered here from the text alone, and only the lines that changed are repainted: a
    Static's own render (Textual's Content, a visual) would be most of the frame
    (docs/performance.md)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._text = ""
        self._strips: list[Strip] | None = None
        """The lines as last wrapped (None: none yet, Textual renders the text)."""
        self._paragraphs: dict[str, list[Strip]] = {}
        """The paragraphs of the last text, wrapped, ..."""
        self._wrapped_as: tuple[int, Style] | None = None
        """... at this width and style."""

    def show(self, text: str) -> None:
        """Show ``text``, repainting only the lines it changed (never a layout pass: the
        caption's grid cell has a fixed size)."""
        self._text = text
        width = self.size.width
        if not width:
            self._strips = None
            self.refresh()  # not laid out yet: Textual draws render() then
            return
        old, self._strips = self._strips, self._wrap(text, width)
        changed = [y for y, (a, b) in enumerate(zip_longest(old or [], self._strips)) if a != b]
        if old is None:
            self.refresh()
        elif changed:
            self.refresh(*line_regions(changed, width))

    def _wrap(self, text: str, width: int) -> list[Strip]:
        """The lines of ``text`` at ``width``; a paragraph wrapped at the last call is not
        wrapped again (only the sample count moves, the axis lines stay)."""
        console, style = self.app.console, self.visual_style.rich_style
        kept = self._paragraphs if self._wrapped_as == (width, style) else {}
        paragraphs: dict[str, list[Strip]] = {}
        lines: list[Strip] = []
        for paragraph in text.split("\n"):  # rich wraps each paragraph on its own too
            strips = paragraphs.get(paragraph) or kept.get(paragraph)
            if strips is None:
                strips = [
                    Strip(list(line.render(console)))
                    .apply_style(style)
                    .crop_extend(0, width, style)
                    for line in Text(paragraph).wrap(console, width)
                ]
            paragraphs[paragraph] = strips
            lines.extend(strips)
        self._paragraphs, self._wrapped_as = paragraphs, (width, style)
        return lines

    def render(self) -> str:
        return self._text

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self._strips is None:
            return super().render_line(y)
        if self._wrapped_as is None or width != self._wrapped_as[0]:
            self._strips = self._wrap(self._text, width)
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, self.visual_style.rich_style)


class DeviceCharts(Grid):
    """Five small charts of the selected device, seconds before now on the x axis."""

    DEFAULT_CSS = """
    DeviceCharts { grid-size: 3 2; height: 1fr; }
    DeviceCharts > #chart-caption { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.device: str | None = None
        """The device drawn."""
        self.draws = 0
        """How many times the charts were drawn (tests and benchmarks read it)."""
        self._last_draw = float("-inf")
        self.marks_drawn: list[Mark] = []
        """The marks on the charts at the last draw (tests read it)."""
        self._caption_text = ""
        self._charts = [BrailleChart(spec.kind, spec.title, id=spec.id) for spec in CHARTS]
        """The charts, in :data:`CHARTS` order (kept: a query each per frame cost more than
        drawing some of them)."""
        self._caption_widget = ChartCaption(id="chart-caption")

    def compose(self) -> Iterable[BrailleChart | Static]:
        yield from self._charts
        yield self._caption_widget

    def _caption(self, text: str) -> None:
        """Show ``text`` under the charts: repainted only when it changed, and never with a
        layout pass (its grid cell has a fixed size)."""
        if text != self._caption_text:
            self._caption_text = text
            self._caption_widget.show(text)

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
        for spec, chart in zip(CHARTS, self._charts, strict=True):
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
            chart.plot(times, connect, lines, span, placed, "0" if at else "now", anchor=now)
