"""Where the TUI's memory goes: the real app under tracemalloc, snapshots on SIGUSR1.

Run the app through this script (``soak.py --tracemalloc DIR`` does, in its tmux)::

    .venv/bin/python benchmarks/tui_tracemalloc.py run DIR [iotop-plus arguments...]

Each SIGUSR1 writes ``DIR/snap-N.tracemalloc`` (N = 1, 2...). Then::

    .venv/bin/python benchmarks/tui_tracemalloc.py diff DIR/snap-1.tracemalloc \
        DIR/snap-2.tracemalloc

prints the allocation sites that grew most between the two (by line, and by the deepest
frame of this project's code), with their bytes and counts; ``top DIR/snap-N.tracemalloc``
prints where one snapshot's memory is (by the project's deepest frame, and by module).
"""

from __future__ import annotations

import os
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

FRAMES = int(os.environ.get("TRACEMALLOC_FRAMES", "12"))
"""Frames kept per traceback (enough to reach the project's code from the stdlib's)."""


def run(directory: Path, argv: list[str]) -> int:
    """Trace allocations, dump a snapshot at each SIGUSR1, run the app."""
    directory.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(FRAMES)
    taken = 0

    def dump(_signum: int, _frame: FrameType | None) -> None:
        nonlocal taken
        taken += 1
        snap = tracemalloc.take_snapshot()
        snap = snap.filter_traces((tracemalloc.Filter(False, tracemalloc.__file__),))
        snap.dump(str(directory / f"snap-{taken}.tracemalloc"))

    signal.signal(signal.SIGUSR1, dump)
    from iotop_plus.cli import main

    return int(main(argv) or 0)


def project_site(tb: tracemalloc.Traceback) -> str:
    """The deepest frame of ``tb`` in this project's code, else the allocating line."""
    for frame in tb:  # most recent first
        if "/iotop_plus/" in frame.filename:
            return f"{frame.filename.split('/iotop_plus/')[-1]}:{frame.lineno}"
    return f"{tb[0].filename}:{tb[0].lineno}"


def diff(a: Path, b: Path, top: int = 25) -> None:
    """Print the growth between two snapshots."""
    old = tracemalloc.Snapshot.load(str(a))
    new = tracemalloc.Snapshot.load(str(b))
    total_old = sum(t.size for t in old.traces)
    total_new = sum(t.size for t in new.traces)
    print(f"traced: {total_old / 2**20:.1f} MiB -> {total_new / 2**20:.1f} MiB")
    print("by allocating line:")
    for stat in new.compare_to(old, "lineno")[:top]:
        where = stat.traceback[0]
        print(
            f"  {stat.size_diff / 1024:+9.0f} KiB {stat.count_diff:+8d}  "
            f"(now {stat.size / 1024:.0f} KiB)  {where.filename}:{where.lineno}"
        )
    print("by the project's deepest frame:")
    grown: dict[str, list[int]] = {}
    for snap, sign in ((new, 1), (old, -1)):
        for trace in snap.traces:
            cell = grown.setdefault(project_site(trace.traceback), [0, 0])
            cell[0] += sign * trace.size
            cell[1] += sign
    for site, (size, count) in sorted(grown.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"  {size / 1024:+9.0f} KiB {count:+8d}  {site}")


def top(path: Path, count: int = 25) -> None:
    """Print where the memory of one snapshot is, by the project's deepest frame and by module."""
    snap = tracemalloc.Snapshot.load(str(path))
    total = sum(t.size for t in snap.traces)
    print(f"traced: {total / 2**20:.1f} MiB")
    by_site: dict[str, list[int]] = {}
    by_module: dict[str, int] = {}
    for trace in snap.traces:
        site = project_site(trace.traceback)
        cell = by_site.setdefault(site, [0, 0])
        cell[0] += trace.size
        cell[1] += 1
        module = site.rsplit(":", 1)[0]
        by_module[module] = by_module.get(module, 0) + trace.size
    print("by the project's deepest frame:")
    for site, (size, n) in sorted(by_site.items(), key=lambda kv: -kv[1][0])[:count]:
        print(f"  {size / 1024:9.0f} KiB {n:8d}  {site}")
    print("by module:")
    for module, size in sorted(by_module.items(), key=lambda kv: -kv[1])[:count]:
        print(f"  {size / 1024:9.0f} KiB  {module}")


def main() -> int:
    """``run DIR ARGS...``, ``diff A B`` or ``top SNAP``."""
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        return run(Path(sys.argv[2]), sys.argv[3:])
    if len(sys.argv) == 4 and sys.argv[1] == "diff":
        diff(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "top":
        top(Path(sys.argv[2]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
