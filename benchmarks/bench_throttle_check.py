"""Cost of the Device tab's throttle check on real v1 blkio cgroups, against the full
cgroup part, same tree, same run.

    sudo .venv/bin/python benchmarks/bench_throttle_check.py [--cgroups 330] [--ticks 30]

Makes ``--cgroups`` real cgroups under ``/sys/fs/cgroup/blkio/iotop-plus-bench-PID/`` (kernel
cgroupfs, not a copy), gives one of them a read IOPS limit on a loop device made for the run,
then times :class:`~iotop_plus.sampling.cgroups.throttle_watch.ThrottleWatch`: its scan (every
limits file, once per 30 s) and a frame's counter reads (the limited cgroup only); and
``CgroupReader.sample()`` (every cgroup's counters, each frame) beside it. Everything made
is removed at the end (cgroups first, then the loop device and its file).
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
from iotop_plus.sampling.cgroups.reader import CgroupReader, detect_layout
from iotop_plus.sampling.cgroups.throttle_watch import ThrottleWatch
from tests.support.loopdev import loop_device


def _ms(values: list[float]) -> str:
    low, high = min(values) * 1000, max(values) * 1000
    return f"median {statistics.median(values) * 1000:.2f} ms (range {low:.2f}-{high:.2f})"


def run(count: int, ticks: int) -> None:
    """Make the cgroups, time both readers, remove everything."""
    layout = detect_layout(Roots())
    if layout.version != "v1":
        sys.exit(f"bench_throttle_check: needs a v1 blkio hierarchy (found {layout.version})")
    base = Path(layout.root) / f"iotop-plus-bench-{os.getpid()}"
    made: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp, loop_device(Path(tmp)) as loop:
        devno = Path(f"/sys/block/{loop}/dev").read_text().strip()
        try:
            base.mkdir()
            made.append(base)
            for i in range(count - 1):
                one = base / f"unit-{i}.service"
                one.mkdir()
                made.append(one)
            (made[1] / "blkio.throttle.read_iops_device").write_text(f"{devno} 100\n")
            total = sum(1 for _ in Path(layout.root).rglob("blkio.throttle.io_serviced"))
            watch = ThrottleWatch(Roots())
            scans = []
            frames = []
            for _ in range(ticks):
                watch._scanned_at = float("-inf")  # a scan every tick, to time it
                started = time.perf_counter()
                watch._scan(time.monotonic())
                scans.append(time.perf_counter() - started)
                started = time.perf_counter()
                found = watch.frame()
                frames.append(time.perf_counter() - started)
            assert found.part is not None, found.problem
            full = []
            reader = CgroupReader(Roots())
            for _ in range(ticks):
                started = time.perf_counter()
                reader.sample()
                full.append(time.perf_counter() - started)
            load = os.getloadavg()[0]
            print(
                f"v1 blkio cgroups on the host: {total}; limited: {len(found.part.sample.cgroups)}"
            )
            print(f"throttle check, scan (every limits file; once per 30 s): {_ms(scans)}")
            print(f"throttle check, a frame (the limited cgroup's counters): {_ms(frames)}")
            print(f"full cgroup part, a frame (every cgroup): {_ms(full)}")
            print(f"{ticks} ticks each; load average {load:.1f}")
        finally:
            for path in reversed(made):
                path.rmdir()


def main() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cgroups", type=int, default=330)
    parser.add_argument("--ticks", type=int, default=30)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_throttle_check: needs root (it makes real cgroups and a loop device)")
    run(args.cgroups, args.ticks)


if __name__ == "__main__":
    main()
