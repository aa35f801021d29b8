"""The TUI's frame store: CPU time to append one frame, to look an earlier one up, and its bytes.

A synthetic tree of ``--devices`` busy disks (``tests/support/synthetic.py``), with this
host's real processes read each frame (as the TUI's Processes tab does), 0.25 s apart. Frames
are made one by one; only the store's own calls are timed (``time.thread_time``). Prints the
median append, the median lookup of a frame a minute back (``frame_at``, then ``step`` one
back: a scrub). Memory is measured apart (``bench_history_memory.py``, the tests'
bytes-a-device-a-frame bounds): tracing allocations would slow the timed calls unevenly.

Run it from either tree to compare (it uses whatever the TUI keeps its history in there:
``record.store.FrameStore``, or ``sampling.ring_timeline.RingTimeline`` in older trees)::

    PYTHONPATH=/tmp/base .venv/bin/python /tmp/base/benchmarks/bench_store.py --devices 200

Usage: ``.venv/bin/python benchmarks/bench_store.py [--devices 60] [--frames 600]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import LiveSource
from tests.support.synthetic import SyntheticTree


def _store(interval: float) -> Any:
    try:
        from iotop_plus.record.store import FrameStore
    except ImportError:
        from iotop_plus.sampling.store.ring import RingTimeline

        return RingTimeline(15, interval)
    return FrameStore(15, interval)


def main() -> None:
    """Fill a store and print its costs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=60)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--interval", type=float, default=0.25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, base: Path) -> None:
    """Fill the store from a synthetic tree under ``base``."""
    tree = SyntheticTree(base, args.devices)
    disks = LiveSource(tree.roots)
    host = LiveSource(Roots(), devices=False)
    host.want("processes", True)
    store = _store(args.interval)
    appends: list[float] = []
    lookups: list[float] = []
    try:
        for i in range(args.frames):
            tree.advance(args.interval)
            frame = disks.next_frame()
            procs = host.next_frame()
            wall = 1.7e9 + args.interval * i
            frame = dataclasses.replace(
                frame,
                sample=dataclasses.replace(frame.sample, wall_time=wall),
                processes=procs.processes,
            )
            t0 = time.thread_time()
            store.append(frame)
            appends.append(time.thread_time() - t0)
            del frame, procs
            if i >= 300 and i % 10 == 0:  # a scrub a minute back
                t0 = time.thread_time()
                shown = store.frame_at(wall - 60.0)
                store.step(shown.wall_time, -1)
                lookups.append(time.thread_time() - t0)
    finally:
        disks.close()
        host.close()
    warm = appends[20:]
    print(f"{type(store).__name__}: {args.devices} devices, {len(store)} frames")
    print(f"  append  median {statistics.median(warm) * 1e3:.3f} ms a frame")
    if lookups:
        print(f"  lookup  median {statistics.median(lookups) * 1e3:.3f} ms (frame_at + step)")


if __name__ == "__main__":
    main()
