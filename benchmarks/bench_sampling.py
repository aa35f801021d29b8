"""Time per sampling tick (read + parse + rates) against psutil, on synthetic /proc trees.

Usage: python benchmarks/bench_sampling.py [--runs N] [--sizes 8,200,5000]

For each size and busy fraction it prints the median over many ticks of:

* ``ours``: ``Sampler.sample()`` (read /proc/diskstats, parse with the unchanged-line
  cache) plus ``rates_between`` (a ``DeviceRates`` for every device; its figures are
  derived on access, so this is what a UI pays before reading the rows it shows);
* ``+figs``: the same, then every one of the 23 figures of every device read once (what
  ``snapshot --all`` or a table sorted over all devices pays);
* ``ours-cold``: the same with a fresh Sampler each tick (no parse cache), the worst case;
* ``psutil``: ``psutil.disk_io_counters(perdisk=True)`` reading the same file (through
  ``psutil.PROCFS_PATH``) with its default ``nowrap=True`` bookkeeping (``_WrapNumbers``
  compares every field with the previous call to undo 32-bit wraps);
* ``psutil-raw``: the same with ``nowrap=False``, i.e. parsing only.

psutil gives raw counters only, no rates. Between ticks, busy devices advance (not timed),
so the cache cannot serve their lines. The machine's load is printed: figures from a busy
machine are inflated, but the ratios compare contenders timed on the same ticks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from iotop_plus.sampling.sampler import Sampler, rates_between
from tests.support.synthetic import SyntheticTree


def bench(tree: SyntheticTree, runs: int) -> dict[str, float]:
    """Median milliseconds per tick for each contender, all reading the same ticks.

    Every tick advances the tree once (not timed); then each contender reads that same file,
    in a rotating order so that no one is always first after the write.
    """
    sampler, sampler_figs = Sampler(tree.roots), Sampler(tree.roots)
    prev = {
        "ours": sampler.sample(),
        "figs": sampler_figs.sample(),
        "cold": Sampler(tree.roots).sample(),
    }

    def ours() -> object:
        cur = sampler.sample()
        rates = rates_between(prev["ours"], cur)
        prev["ours"] = cur
        return rates

    def ours_all_figures() -> object:
        # The same tick, then every figure of every device read once (what a full table
        # sorted by any column, or snapshot --all, needs).
        cur = sampler_figs.sample()
        rates = rates_between(prev["figs"], cur)
        prev["figs"] = cur
        return [r.figures() for r in rates.values() if r is not None]

    def ours_cold() -> object:
        cur = Sampler(tree.roots).sample()
        rates = rates_between(prev["cold"], cur)
        prev["cold"] = cur
        return rates

    contenders: dict[str, Callable[[], object]] = {
        "ours": ours,
        "ours+figures": ours_all_figures,
        "ours-cold": ours_cold,
        "psutil": lambda: psutil.disk_io_counters(perdisk=True, nowrap=True),
        "psutil-raw": lambda: psutil.disk_io_counters(perdisk=True, nowrap=False),
    }
    psutil.PROCFS_PATH = str(tree.roots.proc)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        check = psutil.disk_io_counters(perdisk=True, nowrap=False)
        assert isinstance(check, dict) and len(check) == len(tree.names), "psutil misread"
        for tick in contenders.values():
            tick()  # baselines: the first sample, psutil's first nowrap call
        order = list(contenders)
        for i in range(runs):
            tree.advance(1.0)
            for name in order[i % len(order) :] + order[: i % len(order)]:
                start = time.perf_counter()
                contenders[name]()
                times[name].append(time.perf_counter() - start)
    finally:
        psutil.PROCFS_PATH = "/proc"
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=0, help="ticks per figure (default: by size)")
    parser.add_argument("--sizes", default="8,200,5000")
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"python {sys.version.split()[0]}, psutil {psutil.__version__}, {os.cpu_count()} CPUs,"
        f" load average {load}; median ms per tick"
    )
    header = (
        f"{'devices':>7} {'busy':>5} {'ours':>8} {'+figs':>8} {'cold':>8} {'psutil':>8}"
        f" {'raw':>8} {'psutil/ours':>11} {'raw/ours':>8} {'psutil/+figs':>10}"
    )
    print(header)
    print("-" * len(header))
    for n in (int(s) for s in args.sizes.split(",")):
        runs = args.runs or (300 if n <= 200 else 40)
        with tempfile.TemporaryDirectory(prefix="bench-sampling-") as tmp:
            tree = SyntheticTree(Path(tmp), n)
            for busy in (1.0, 0.1):
                tree.busy = set(tree.names[: max(1, round(n * busy))])
                r = bench(tree, runs)
                print(
                    f"{n:7d} {busy:5.0%} {r['ours']:8.3f} {r['ours+figures']:8.3f}"
                    f" {r['ours-cold']:8.3f} {r['psutil']:8.3f} {r['psutil-raw']:8.3f}"
                    f" {r['psutil'] / r['ours']:10.2f}x {r['psutil-raw'] / r['ours']:7.2f}x"
                    f" {r['psutil'] / r['ours+figures']:9.2f}x",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
