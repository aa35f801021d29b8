"""The TUI's frame store: CPU time to append one frame, to encode it, to look an earlier one up.

A synthetic tree of ``--devices`` busy disks (``tests/support/synthetic.py``), with this
host's real processes read each frame (as the TUI's Processes tab does), 0.25 s apart. Frames
are made one by one; only the store's own calls are timed (``time.thread_time``). Prints the
median append (on the appending thread), the encoding of the closed chunks per frame (on the
store's encoding thread, where it has one), and the median lookup of a frame a minute back
(``frame_at``, then ``step`` one back: a scrub). Memory is measured apart
(``bench_history_memory.py``, the tests' bytes-a-device-a-frame bounds): tracing allocations
would slow the timed calls unevenly.

``--store ring`` times what trees before the one store did each frame instead (in such a
tree: the modules are gone from later ones): the chart history's ``record`` and the packed
ring's ``append``. Copy this file into the older tree to compare, in one run::

    (cd /tmp/base && .venv/bin/python benchmarks/bench_store.py --devices 200 --store ring)

Usage: ``.venv/bin/python benchmarks/bench_store.py [--devices 60] [--frames 600]
[--store store|ring]``.
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
from iotop_plus.sampling.frame.live import LiveSource
from tests.support.synthetic import SyntheticTree


class _RingAndHistory:
    """What the TUI kept each frame in before the one store: chart rings and a packed ring."""

    def __init__(self, interval: float) -> None:
        from iotop_plus.sampling.store.history import History
        from iotop_plus.sampling.store.ring import RingTimeline

        self.history = History(600)
        self.ring = RingTimeline(15, interval)

    def append(self, frame: Any) -> None:
        self.history.record(frame.sample.monotonic, frame.rates, None, frame.sample.identities)
        self.ring.append(frame)

    def frame_at(self, wall: float) -> Any:
        return self.ring.frame_at(wall)

    def step(self, wall: float, n: int) -> Any:
        return self.ring.step(wall, n)

    def __len__(self) -> int:
        return len(self.ring)


def _store(kind: str, interval: float) -> Any:
    if kind == "ring":
        return _RingAndHistory(interval)
    from iotop_plus.record.store import FrameStore

    return FrameStore(15, interval)


def main() -> None:
    """Fill a store and print its costs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=60)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--store", choices=("store", "ring"), default="store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, base: Path) -> None:
    """Fill the store from a synthetic tree under ``base``."""
    tree = SyntheticTree(base, args.devices)
    disks = LiveSource(tree.roots)
    host = LiveSource(Roots(), devices=False)
    host.want("processes", True)
    store = _store(args.store, args.interval)
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
    coder = getattr(store, "coder", None)
    if coder is not None and getattr(coder, "frames", 0):
        store.wait_encoded()
        print(f"  encode  mean   {coder.seconds / coder.frames * 1e3:.3f} ms a frame (its thread)")
    if lookups:
        print(f"  lookup  median {statistics.median(lookups) * 1e3:.3f} ms (frame_at + step)")


if __name__ == "__main__":
    main()
