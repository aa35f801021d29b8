"""Per-frame cost of drawing the five device charts, in-process.

Prints the median CPU time to draw the five charts of one device with a full history (600
points a series) at the sizes they have at 120x36 (26x11 cells) and 200x50 (about 50x17),
for the braille charts the TUI draws (``BrailleChart.build``) and, for comparison, for
plotext's build plus ``Text.from_ansi``, which the charts used before.

Usage: ``.venv/bin/python benchmarks/bench_charts.py [--repeat 50]``. Never asserts.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from iotop_plus.tui.widgets.braille_chart import BrailleChart  # noqa: E402
from iotop_plus.tui.widgets.chart_scale import Line  # noqa: E402
from iotop_plus.tui.widgets.charts import CHARTS, READ_STYLE, WRITE_STYLE, joins  # noqa: E402

POINTS = 600
SIZES = ((26, 11), (50, 17))


def series() -> tuple[list[float], dict[str, list[float]]]:
    """600 seconds of varied figures for every charted metric."""
    times = [float(t - POINTS + 1) for t in range(POINTS)]
    data: dict[str, list[float]] = {}
    for k, spec in enumerate(CHARTS):
        for j, metric in enumerate(spec.metrics):
            scale = 10.0 ** (k % 4 + 1)
            data[metric] = [scale * (1.2 + math.sin(i / (9.0 + j) + k)) for i in range(POINTS)]
    return times, data


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn()`` in ms."""
    out = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        out.append((time.process_time() - t0) * 1000)
    return statistics.median(out)


def braille(times: Sequence[float], data: dict[str, list[float]], w: int, h: int) -> None:
    connect = joins(times)
    for spec in CHARTS:
        chart = BrailleChart(spec.kind, spec.title)
        styles = (READ_STYLE, WRITE_STYLE)
        lines = [Line(m, styles[i], data[m]) for i, m in enumerate(spec.metrics)]
        chart.plot(times, connect, lines, span=POINTS)
        chart.build(w, h)


def plotext(times: Sequence[float], data: dict[str, list[float]], w: int, h: int) -> None:
    import plotext as plt
    from rich.text import Text

    from iotop_plus.tui.widgets.charts import bucket_max

    for spec in CHARTS:
        plt.clear_figure()
        plt.theme("clear")
        plt.plot_size(w, h)
        plt.title(spec.title)
        for metric in spec.metrics:
            xs, ys = bucket_max(times, data[metric], max(w - 8, 10))
            plt.plot(xs, ys, label=metric, marker="braille")
        Text.from_ansi(plt.build())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    times, data = series()
    print(f"five charts, {POINTS} points a series; median of {args.repeat} draws")
    for w, h in SIZES:
        ours = median_ms(lambda w=w, h=h: braille(times, data, w, h), args.repeat)
        theirs = median_ms(lambda w=w, h=h: plotext(times, data, w, h), max(5, args.repeat // 5))
        print(f"  {w}x{h} cells: braille {ours:6.2f} ms   plotext+from_ansi {theirs:6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
