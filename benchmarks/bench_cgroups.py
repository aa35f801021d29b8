"""Cost of one cgroup sample: our reader vs a naive ``Path.read_text`` loop, same files, same run.

    .venv/bin/python benchmarks/bench_cgroups.py [--cgroups 1000] [--ticks 30] [--dir /dev/shm]

Writes a synthetic v2 tree (tests/support/cgroup_trees.py) into a temporary directory, then
times ``CgroupReader.sample()`` (walk, io.stat, io.pressure; limits every 10 s) against a loop
that walks with ``Path.rglob`` and reads io.stat and io.pressure of every cgroup with
``read_text`` and parses them the obvious way. The target is <= 20 ms per tick for 1,000.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import CgroupReader
from tests.support.cgroup_trees import bump_io_stat, synthetic_tree


def naive_tick(root: Path) -> int:
    """What a first attempt looks like: rglob, read_text, split."""
    found = 0
    for stat in root.rglob("io.stat"):
        counters = {}
        for line in stat.read_text().splitlines():
            words = line.split()
            if words:
                counters[words[0]] = dict(w.split("=", 1) for w in words[1:])
        pressure = stat.with_name("io.pressure")
        if pressure.exists():
            pressure.read_text().split()
        found += 1
    return found


def floor_tick(files: list[str]) -> None:
    """Only the syscalls: open, read, close of the same files, nothing parsed."""
    for name in files:
        fd = os.open(name, os.O_RDONLY)
        os.read(fd, 65536)
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgroups", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--dir", default=None, help="where to write the tree (default: tmp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="iotop-plus-cgbench-") as tmp:
        base = Path(tmp)
        started = time.monotonic()
        paths = synthetic_tree(base, args.cgroups)
        print(f"wrote {args.cgroups:,} cgroups in {time.monotonic() - started:.1f} s at {base}")
        reader = CgroupReader(Roots(base / "proc", base / "sys"))
        for label, every in (("every cgroup busy", 1), ("1 in 10 busy", 10)):
            ours: list[float] = []
            naive: list[float] = []
            floor: list[float] = []
            files = [
                str(p)
                for p in (base / "sys" / "fs" / "cgroup").rglob("io.*")
                if p.name in ("io.stat", "io.pressure")
            ]
            for tick in range(args.ticks):  # interleaved: both see the same cache and load
                bump_io_stat(base, paths, tick, every=every)  # new counters, untimed
                t0 = time.perf_counter()
                sample = reader.sample()
                t1 = time.perf_counter()
                count = naive_tick(base / "sys" / "fs" / "cgroup")
                t2 = time.perf_counter()
                floor_tick(files)
                floor.append((time.perf_counter() - t2) * 1000)
                ours.append((t1 - t0) * 1000)
                naive.append((t2 - t1) * 1000)
            assert len(sample.cgroups) == count == args.cgroups, (len(sample.cgroups), count)
            ours_ms = statistics.median(ours)
            naive_ms = statistics.median(naive)
            print(
                f"{args.cgroups:,} cgroups, {label}, {args.ticks} ticks (median): ours "
                f"{ours_ms:.2f} ms/tick (max {max(ours):.2f}), naive Path loop {naive_ms:.2f} "
                f"ms/tick, naive/ours {naive_ms / ours_ms:.1f}x; the same {len(files):,} files "
                f"opened and read, nothing else: {statistics.median(floor):.2f} ms; "
                "target <= 20 ms: "
                f"{'met' if ours_ms <= 20 else 'MISSED'}"
            )


if __name__ == "__main__":
    main()
