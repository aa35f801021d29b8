"""Parse-only and per-tick time against psutil, on synthetic /proc trees.

Usage: python benchmarks/bench_sampling.py [--runs N] [--sizes 8,200,5000]

For each size and busy fraction it prints the median over many ticks of:

* ``read``: reading /proc/diskstats alone (``read_bounded``), the floor everyone pays;
* ``parse``: ``Sampler.sample()``: read /proc/diskstats and parse it, with the
  unchanged-line cache. This is the work ``psutil.disk_io_counters`` does (read + parse);
* ``tick``: the same, plus ``rates_between`` (a ``DeviceRates`` for every device, reset
  and re-created devices detected; its figures are derived on access): what a UI pays
  before reading the rows it shows;
* ``+figs``: a tick, then every one of the 23 figures of every device read once (what
  ``snapshot --all`` or a table sorted over all devices pays);
* ``cold``: a tick with a fresh Sampler (no parse cache), the worst case;
* ``psutil``: ``psutil.disk_io_counters(perdisk=True)`` reading the same file (through
  ``psutil.PROCFS_PATH``) with its default ``nowrap=True`` bookkeeping (``_WrapNumbers``
  compares every field with the previous call to undo wraps: its counterpart of our rates);
* ``raw``: the same with ``nowrap=False``, i.e. read and parse only.

Ratios are psutil's time over ours (above 1: we are faster), for ``parse`` (the issue's
target: psutil / parse >= 2 at 5,000 busy devices) and for ``tick``. psutil converts 11
fields a line; we convert all 17 counters plus major and minor.

Between ticks, busy devices advance (not timed), so the cache cannot serve their lines.
Every contender reads the same file each tick, in a rotating order. The machine's load is
printed: absolute figures from a busy machine are inflated, the ratios much less so.
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

from iotop_plus.sampling.disks.sampler import Sampler, rates_between
from iotop_plus.sysfs import read_bounded
from tests.support.synthetic import SyntheticTree


def bench(tree: SyntheticTree, runs: int) -> dict[str, float]:
    """Median milliseconds per tick for each contender, all reading the same ticks.

    Every tick advances the tree once (not timed); then each contender reads that same file,
    in a rotating order so that no one is always first after the write.
    """
    # One Sampler per contender: each sees every tick once, as the app's sampler does.
    parse_only, ticking, figures = Sampler(tree.roots), Sampler(tree.roots), Sampler(tree.roots)
    parse_only.sample()
    prev = {
        "tick": ticking.sample(),
        "figs": figures.sample(),
        "cold": Sampler(tree.roots).sample(),
    }
    diskstats = tree.roots.diskstats

    def tick() -> object:
        cur = ticking.sample()
        rates = rates_between(prev["tick"], cur)
        prev["tick"] = cur
        return rates

    def tick_all_figures() -> object:
        cur = figures.sample()
        rates = rates_between(prev["figs"], cur)
        prev["figs"] = cur
        return [r.figures() for r in rates.values() if r is not None]

    def cold() -> object:
        cur = Sampler(tree.roots).sample()
        rates = rates_between(prev["cold"], cur)
        prev["cold"] = cur
        return rates

    contenders: dict[str, Callable[[], object]] = {
        "read": lambda: read_bounded(diskstats),
        "parse": parse_only.sample,
        "tick": tick,
        "+figs": tick_all_figures,
        "cold": cold,
        "psutil": lambda: psutil.disk_io_counters(perdisk=True, nowrap=True),
        "raw": lambda: psutil.disk_io_counters(perdisk=True, nowrap=False),
    }
    psutil.PROCFS_PATH = str(tree.roots.proc)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        check = psutil.disk_io_counters(perdisk=True, nowrap=False)
        assert isinstance(check, dict) and len(check) == len(tree.names), "psutil misread"
        assert len(parse_only.sample().counters) == len(tree.names), "we misread"
        for run in contenders.values():
            run()  # baselines: the first sample, psutil's first nowrap call
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
        f" load average {load}; median ms per tick; ratios are psutil's time over ours"
    )
    columns = ("read", "parse", "tick", "+figs", "cold", "psutil", "raw")
    ratios = ("psutil/parse", "raw/parse", "psutil/tick", "raw/tick")
    header = (
        f"{'devices':>7} {'busy':>4} "
        + " ".join(f"{c:>7}" for c in columns)
        + " "
        + " ".join(f"{r:>12}" for r in ratios)
    )
    print(header)
    print("-" * len(header))
    for n in (int(s) for s in args.sizes.split(",")):
        runs = args.runs or (300 if n <= 200 else 60)
        with tempfile.TemporaryDirectory(prefix="bench-sampling-") as tmp:
            tree = SyntheticTree(Path(tmp), n)
            for busy in (1.0, 0.1):
                tree.busy = set(tree.names[: max(1, round(n * busy))])
                r = bench(tree, runs)
                figures = [r["psutil"] / r["parse"], r["raw"] / r["parse"]]
                figures += [r["psutil"] / r["tick"], r["raw"] / r["tick"]]
                print(
                    f"{n:7d} {busy:4.0%} "
                    + " ".join(f"{r[c]:7.3f}" for c in columns)
                    + " "
                    + " ".join(f"{x:11.2f}x" for x in figures),
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
