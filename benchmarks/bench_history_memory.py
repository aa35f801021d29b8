"""The TUI's frame store in memory: bytes per device per frame, and RSS as it fills.

Fills a :class:`~iotop_plus.record.store.FrameStore` (15 minutes at 0.25 s: 3,601 frames)
in-process with frames of a synthetic host of ``--devices`` (60) disks, each frame also
carrying this host's real processes (read once per frame from /proc, the store keeps the top
20) and memory figures, as the TUI's would (``--tui-parts``: also each device's health and
the host's cgroups). The store keeps the charts' figures too. Prints, every ``--every``
frames, the traced Python memory (tracemalloc) and VmRSS (once the closed chunks are
encoded), then the bytes per device per frame held by the store once full.

Usage::

    .venv/bin/python benchmarks/bench_history_memory.py [--devices 60] [--frames 4000]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from iotop_plus.record.store import FrameStore  # noqa: E402
from iotop_plus.roots import Roots  # noqa: E402
from iotop_plus.sampling.frame.live import LiveSource  # noqa: E402
from tests.support.synthetic import SyntheticTree  # noqa: E402


def vm_rss_kib() -> int:
    """VmRSS of this process in KiB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    """Fill the ring and print its memory."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=60)
    ap.add_argument("--frames", type=int, default=4000)
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--every", type=int, default=300)
    ap.add_argument("--no-processes", action="store_true", help="frames without processes")
    ap.add_argument(
        "--tui-parts",
        action="store_true",
        help="also the parts the TUI's frames carry: health (per device) and cgroups",
    )
    args = ap.parse_args()

    base = Path(tempfile.mkdtemp(prefix="bench-history-", dir="/dev/shm"))
    try:
        run(args, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(args: argparse.Namespace, base: Path) -> None:
    """Fill the store from a synthetic tree under ``base``."""
    tree = SyntheticTree(base, args.devices)
    disks = LiveSource(tree.roots)
    host = LiveSource(Roots(), devices=False)
    if not args.no_processes:
        host.want("processes", True)
    if args.tui_parts:
        disks.want("health", True)
        host.want("cgroups", True)
    ring = FrameStore(15, args.interval)
    print(f"devices {args.devices}, store capacity {ring.capacity} frames, load {os.getloadavg()}")
    # The frames are made before measuring, a chunk at a time, so tracemalloc sees the store only.
    wall = time.time()
    tracemalloc.start()
    base_traced = tracemalloc.get_traced_memory()[0]
    base_rss = vm_rss_kib()
    full_at: tuple[int, int] | None = None
    print(f"{'frames':>7} {'traced KiB':>11} {'RSS KiB':>9} {'B/dev/frame':>12}")
    for i in range(1, args.frames + 1):
        tree.advance(args.interval)
        frame = disks.next_frame()
        procs = host.next_frame()
        wall += args.interval
        frame = dataclasses.replace(
            frame,
            sample=dataclasses.replace(frame.sample, wall_time=wall),
            processes=procs.processes,
            cgroups=procs.cgroups,
            parts={**procs.parts, **frame.parts},
        )
        ring.append(frame)
        del frame, procs
        if i % args.every == 0 or i == args.frames:
            ring.wait_encoded()
            gc.collect()
            traced = tracemalloc.get_traced_memory()[0] - base_traced
            per = traced / max(1, len(ring)) / args.devices
            print(f"{i:>7} {traced // 1024:>11} {vm_rss_kib() - base_rss:>9} {per:>12.1f}")
            if full_at is None and len(ring) >= ring.capacity:
                full_at = (i, traced)
    snap = tracemalloc.take_snapshot()
    print("top allocation sites:")
    for stat in snap.statistics("lineno")[:12]:
        print(f"  {stat.size // 1024:>8} KiB  {stat.count:>8}  {stat.traceback[0]}")
    disks.close()
    host.close()


if __name__ == "__main__":
    main()
