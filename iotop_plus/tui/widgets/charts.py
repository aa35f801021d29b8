"""Charts of the selected device's recent history, drawn with textual-plotext.

Drawing a plot is the costliest thing the app does per tick (~6 ms for a small one), so the
charts draw only the selected device, only when on screen, only when a new point arrived (at
the pace of the table), and with the history bucketed down to the plot's width.

Setting changes and probes are marked with a vertical line and a short label, live and in
history (where the window ends at the frame shown, and its time is in the caption).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from textual.containers import Grid
from textual.widgets import Static
from textual_plotext import PlotextPlot

from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.figures import figure
from iotop_plus.sampling.history import DeviceHistory, Mark


@dataclass(frozen=True)
class ChartSpec:
    """One plot: which history series it draws, and how they are labelled."""

    id: str
    """Widget id."""
    title: str
    """Plot title, with the unit."""
    metrics: tuple[str, ...]
    """DeviceRates attributes drawn; the legend shows their iostat titles."""

    @property
    def series(self) -> tuple[tuple[str, str], ...]:
        """(metric, legend label) pairs."""
        return tuple((m, figure(m).title) for m in self.metrics)


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("chart-iops", "IOPS", ("r_s", "w_s")),
    ChartSpec("chart-throughput", "KiB/s", ("rkb_s", "wkb_s")),
    ChartSpec("chart-await", "await ms", ("r_await", "w_await")),
    ChartSpec("chart-queue", "queue", ("aqu_sz", "in_flight")),
    ChartSpec("chart-util", "%util", ("util",)),
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


class DeviceCharts(Grid):
    """Five small plots of the selected device, seconds before now on the x axis."""

    DEFAULT_CSS = """
    DeviceCharts { grid-size: 3 2; height: 1fr; }
    DeviceCharts > #chart-caption { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.device: str | None = None
        """The device drawn."""
        self.draws = 0
        """How many times the plots were drawn (tests and benchmarks read it)."""
        self._last_draw = float("-inf")
        self.marks_drawn: list[Mark] = []
        """The marks on the plots at the last draw (tests read it)."""

    def compose(self) -> Iterable[PlotextPlot | Static]:
        for spec in CHARTS:
            plot = PlotextPlot(id=spec.id)
            # The "clear" theme paints no background per character: half the build cost
            # and a tenth of the ANSI decoding of the app-coloured theme.
            plot.theme = "clear"
            yield plot
        yield Static("", id="chart-caption", markup=False)

    def due(self, device: str | None, now: float) -> bool:
        """Whether a draw is worth doing: a new device, or another end time than the last draw
        (a newer point live; any other frame when scrubbing through history)."""
        return device != self.device or now != self._last_draw

    def draw(
        self,
        device: str | None,
        history: DeviceHistory | None,
        marks: Iterable[Mark],
        now: float,
        *,
        at: str | None = None,
    ) -> None:
        """Draw ``device``'s history; x is seconds relative to ``now``.

        Args:
            device: The device drawn.
            history: Its series (timestamps on the same clock as ``now`` and the marks).
            marks: Setting changes and probes.
            now: The end of the window: live, the monotonic now; scrubbed, the wall time of
                the frame shown.
            at: That frame's time for the caption, when scrubbed (None: live).
        """
        self.device = device
        self._last_draw = now
        self.draws += 1
        caption = self.query_one("#chart-caption", Static)
        if device is None or history is None or len(history) == 0:
            caption.update(f"{printable(device or 'no device')}: no history yet")
        else:
            before = f"seconds before {at}" if at else "seconds before now"
            caption.update(
                f"{printable(device)}: {len(history)} samples\n"
                f"x axis: {before}\nmarks: settings, probes"
            )
        times = [t - now for t in history.timestamps] if history is not None else []
        self.marks_drawn = [
            m
            for m in marks
            if (m.device is None or m.device == device)
            and times
            and now + times[0] <= m.timestamp
            and (at is None or m.timestamp <= now)  # scrubbed: nothing after the frame shown
        ]
        device_marks = self.marks_drawn
        for spec in CHARTS:
            plot = self.query_one(f"#{spec.id}", PlotextPlot)
            plt = plot.plt
            plt.clear_figure()
            plt.title(spec.title)
            width = max(plot.size.width - 8, 10)
            if history is not None and times:
                top = 0.0
                for metric, label in spec.series:
                    xs, ys = bucket_max(times, list(history.series[metric]), width)
                    plt.plot(xs, ys, label=label, marker="braille")
                    top = max(top, *ys)
                # Rates are never negative; an idle device gets 0..1, not -1..1.
                plt.ylim(0, top * 1.05 if top > 0 else 1)
                for mark in device_marks:
                    plt.vline(mark.timestamp - now, "magenta")
                    x = mark.timestamp - now
                    # Labels run leftwards from marks in the right half, so they stay inside.
                    if x > times[0] / 2:
                        plt.text(
                            printable(mark.label), x=x, y=top, color="magenta", alignment="right"
                        )
                    else:
                        plt.text(
                            printable(mark.label), x=x, y=top, color="magenta", alignment="left"
                        )
            plot.refresh()
