"""The real TUI's memory as its history ring turns over, in-process and fast.

The soak (``soak.py``) needs 40 real minutes to see the ring fill and turn over at 0.25 s.
Here the real app runs in-process (Textual's test driver, 120x36, Processes tab open) on a
stepped clock: every frame is a real frame of this host (or of ``--devices`` busy synthetic
disks), taken as fast as the app handles them, so the 3,601 frames of a 15-minute ring come in
about five minutes. Wall times come from the real clock, so the ring is bounded by its frame
count, as live at 0.25 s.

Every ``--every`` frames it prints, after a collection: VmRSS, pymalloc's blocks in use,
glibc malloc's bytes in use and free (``mallinfo2``, arenas only), the objects the collector
tracks, and the types whose count grew most since the line before. At the end: the RSS slope
after the ring filled, per frame and per second at ``--interval`` (target: < 1 KB/s).

``--tree DIR`` runs the app from another checkout (``git archive COMMIT iotop_plus | tar -x -C
DIR``), for a before/after in the same minutes (run both at once: each is one process).

Usage::

    .venv/bin/python benchmarks/bench_app_memory.py [--frames 6000] [--every 500]
        [--history-minutes 15] [--devices N] [--tree DIR]

Never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from soak import vm_rss_kib  # this directory: run as a script (imports no iotop_plus)

REPO = Path(__file__).resolve().parents[1]


class Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (the fields read here)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def mallinfo() -> Mallinfo2 | None:
    """glibc's allocator figures, or None (another libc)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Mallinfo2
        return libc.mallinfo2()
    except (OSError, AttributeError):
        return None


async def soak(args: argparse.Namespace) -> None:
    """Step the app ``args.frames`` frames and print its memory."""
    from iotop_plus.config import Config
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.clock import SamplerThread
    from iotop_plus.tui.app import make_app
    from tests.support.frames import StepClock, on_clock
    from tests.support.synthetic import SyntheticTree
    from tests.tui.helpers import started, step

    SamplerThread.__init__ = on_clock(StepClock())  # type: ignore[method-assign]
    config = Config(interval=args.interval, history_minutes=args.history_minutes)
    tree = None
    if args.devices:
        tree = SyntheticTree(Path(tempfile.mkdtemp(prefix="app-memory-")) / "tree", args.devices)
        app = make_app(tree.roots, config)
    else:
        app = make_app(Roots(), config)
    import iotop_plus

    print(
        f"code {Path(iotop_plus.__file__).parent}, interval {args.interval:g} s, ring of "
        f"{_kept(app).capacity} frames"
    )
    print(
        f"{'frames':>7} {'RSS KiB':>8} {'blocks':>8} {'malloc KiB':>10} {'free KiB':>8} "
        f"{'objects':>8}  grew most"
    )
    seen: collections.Counter[str] = collections.Counter()
    rss: list[tuple[int, int]] = []
    t0 = time.monotonic()
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await started(pilot, app)
            await pilot.press("p")
            for i in range(1, args.frames + 1):
                if tree is not None:
                    tree.advance(args.interval)
                await step(pilot, app)
                if i % args.every:
                    continue
                await pilot.pause()
                gc.collect()
                info = mallinfo()
                objects = gc.get_objects()
                types = collections.Counter(type(o).__name__ for o in objects)
                del objects
                grew = ", ".join(f"{n} +{c}" for n, c in (types - seen).most_common(4))
                seen = types
                now = vm_rss_kib(os.getpid()) or 0
                rss.append((i, now))
                used, free = (info.uordblks >> 10, info.fordblks >> 10) if info else (0, 0)
                print(
                    f"{i:>7} {now:>8} {sys.getallocatedblocks():>8} {used:>10} {free:>8} "
                    f"{sum(types.values()):>8}  {grew}",
                    flush=True,
                )
    finally:
        if tree is not None:
            shutil.rmtree(tree.base.parent, ignore_errors=True)
    full = [(i, r) for i, r in rss if i > _kept(app).capacity]
    print(f"{args.frames} frames in {time.monotonic() - t0:.0f} s")
    if len(full) >= 2:
        slope = statistics.linear_regression([i for i, _ in full], [r for _, r in full]).slope
        print(
            f"after the ring filled: {slope * 1024:+.0f} B/frame, "
            f"{slope * 1.024 / args.interval:+.2f} KB/s at {args.interval:g} s (target < 1)"
        )
    else:
        print("the ring did not fill: give more --frames")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=6000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--history-minutes", type=float, default=15.0)
    parser.add_argument("--devices", type=int, default=0, help="a synthetic tree of N disks")
    parser.add_argument("--tree", type=Path, help="run iotop_plus from this checkout")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # the tests' helpers
    if args.tree is not None:
        sys.path.insert(0, str(args.tree.resolve()))
    asyncio.run(soak(args))


def _kept(app: Any) -> Any:
    """The app's frame store (``timeline`` in trees before the one store, for ``--tree``)."""
    store = getattr(app, "store", None)
    return store if store is not None else app.timeline


if __name__ == "__main__":
    main()
