"""CPU a frame of the main screen's charts, drawn and painted, as the window moves on.

The five device charts at the size they have at 120x36 (78x23 cells) in a headless Textual app,
fed one point a second of fio-like figures. Each frame is ``DeviceCharts.draw`` and the paint
that follows (``pilot.pause()``, which also runs the test pilot's own work); the process CPU
time of the draw alone, and with the paint, is taken. Two stretches are reported:

- **start**: frames 10-70, the first minute after the settle ``bench_light.py`` gives the
  TUI, where the history is shorter than the window the charts show at most;
- **full**: frames 620-680, once the history spans the whole window (600 points).

With ``--before DIR`` (a ``git archive`` of an earlier tree with ``iotop_plus/``), the same
frames are timed there too, in alternated rounds in fresh interpreters, and the ratios printed.

Usage: ``.venv/bin/python benchmarks/bench_chart_frames.py [--rounds 3] [--before DIR]``.
Never asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STRETCHES = {"start": (10, 70), "full": (620, 680)}
SIZE = (78, 23)


def measure() -> dict[str, float]:
    """Median CPU ms a frame in each stretch, for the tree on ``sys.path``."""
    import asyncio
    import gc
    import math
    import random
    import time
    from array import array

    from textual.app import App, ComposeResult

    from iotop_plus.sampling.store.timeline import METRICS, Columns
    from iotop_plus.tui.engine.gc_policy import GEN0_THRESHOLD
    from iotop_plus.tui.widgets import charts as charts_module
    from iotop_plus.tui.widgets.charts import DeviceCharts

    def shortest() -> float:
        """The shortest x axis the TUI gives at 1 s (a tree before ``min_span`` had 30 s)."""
        if hasattr(charts_module, "min_span"):
            return float(charts_module.min_span(1.0, 600.0))
        return float(charts_module.MIN_SPAN_INTERVALS)

    class ChartsAlone(App[None]):
        CSS = f"DeviceCharts {{ width: {SIZE[0]}; height: {SIZE[1]}; }}"

        def compose(self) -> ComposeResult:
            yield DeviceCharts()

    def settle_collector() -> None:
        # As the TUI does once its screen is up (``tui/engine/gc_policy.py``).
        gc.collect()
        gc.freeze()
        gc.set_threshold(GEN0_THRESHOLD, *gc.get_threshold()[1:])

    rng = random.Random(7)
    base = {
        "r_s": 900.0,
        "w_s": 600.0,
        "rkb_s": 3600.0,
        "wkb_s": 2400.0,
        "r_await": 0.4,
        "w_await": 0.9,
        "aqu_sz": 1.2,
        "in_flight": 2.0,
        "util": 60.0,
    }
    start = 1_700_000_000.0
    last = max(hi for _, hi in STRETCHES.values())
    walls = array("d")
    figures: dict[str, array[float]] = {m: array("f") for m in METRICS}
    spent: dict[str, list[float]] = {
        f"{name}{part}": [] for name in STRETCHES for part in ("", " +paint")
    }

    async def run() -> None:
        app = ChartsAlone()
        async with app.run_test(size=(SIZE[0] + 2, SIZE[1] + 2)) as pilot:
            charts = app.query_one(DeviceCharts)
            settle_collector()
            for k in range(last):
                now = start + k + rng.uniform(-0.01, 0.01)
                walls.append(now)
                for m in METRICS:
                    wave = 1 + 0.3 * math.sin(k / 17) + rng.uniform(-0.15, 0.15)
                    figures[m].append(base[m] * wave)
                kept = max(0, len(walls) - 600)
                history = Columns(walls[kept:], {m: v[kept:] for m, v in figures.items()})
                t0 = time.process_time()
                charts.draw("loop0", history, (), now, start=walls[kept], min_span=shortest())
                t1 = time.process_time()
                await pilot.pause()
                t2 = time.process_time()
                for name, (lo, hi) in STRETCHES.items():
                    if lo <= k < hi:
                        spent[name].append((t1 - t0) * 1000)
                        spent[name + " +paint"].append((t2 - t0) * 1000)

    asyncio.run(run())
    return {name: statistics.mean(v) for name, v in spent.items()}


def in_fresh_interpreter(tree: Path) -> dict[str, float]:
    """:func:`measure` for the tree at ``tree``, in a fresh interpreter."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(1, {str(REPO)!r});"
        "import json, bench_chart_frames as b; print(json.dumps(b.measure()))"
    )
    env_path = str(REPO / "benchmarks")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="an earlier tree to time alongside")
    args = parser.parse_args()
    trees = {"now": REPO}
    if args.before is not None:
        trees["before"] = args.before.resolve()
    got: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for r in range(args.rounds):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        for name, tree in order:
            got[name].append(in_fresh_interpreter(tree))
            print(
                f"round {r + 1} {name}: "
                + ", ".join(f"{k} {v:.2f} ms" for k, v in got[name][-1].items()),
                flush=True,
            )
    print(
        f"\nCPU a frame, mean over the stretch, median of {args.rounds} rounds "
        f"(charts {SIZE[0]}x{SIZE[1]}):"
    )
    for stretch in got["now"][0]:
        lo, hi = STRETCHES[stretch.split()[0]]
        line = f"  {stretch} (frames {lo}-{hi}):"
        medians = {n: statistics.median(g[stretch] for g in got[n]) for n in trees}
        for name, value in medians.items():
            line += f"  {name} {value:.2f} ms"
        if "before" in medians and medians["before"] > 0:
            line += f"  now/before {medians['now'] / medians['before']:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
