"""Headless start-up of iotop-plus against bare Python, ``import textual.app`` and iostat.

Prints figures; never asserts. Every row is the median wall time of ``--runs`` fresh processes,
measured alternately with its reference in the same run (so a load change hits both), and the
load average beside it:

- ``iotop-plus --version`` and ``--help`` against ``python -c pass`` in the same editable venv
  (target: <= 2x);
- ``iotop-plus snapshot -c 1 -i 0.1 -f json`` minus its 0.1 s interval against a fresh
  ``python -c 'import textual.app'`` (target: <= 0.4x, aim 0.3x), and ``iostat -d -x -o JSON``
  (one report since boot: iostat takes whole seconds only) as the peer;
- the modules ``--version`` and ``snapshot`` import that they should not (pyudev, asyncio,
  prometheus_client, textual), from ``python -X importtime``;
- ``--first-figures N``: the TUI's first figures (Enter at a shell prompt in tmux at 120x36 to
  the first screen whose device row shows numbers; this host's own devices, ``-i 1``),
  alternated with a fresh ``python -c 'import textual.app'``, bpytop's first frame, and
  iotop_plus from ``--tree`` when given; median of N starts each, and the ratio (aim <= 1.5x).

Usage: ``.venv/bin/python benchmarks/bench_startup.py [--runs 5] [--first-figures 9]
[--tree /tmp/old-checkout]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
SCRIPT = str(BIN / "iotop-plus") if (BIN / "iotop-plus").exists() else "iotop-plus"
HEAVY = ("pyudev", "asyncio", "prometheus_client", "textual")


def wall(argv: Sequence[str]) -> float:
    """Seconds one run of ``argv`` takes to exit.

    Waited for without a timeout, in ``waitpid``: with one, ``Popen.wait`` polls at growing
    intervals (1, 2, 4 ... 32, then 50 ms), so every figure came out as 31.5, 63.5, 113.5 ...
    ms (a 22 ms ``python -c pass`` read 32, a 35 ms ``--version`` 64). A run that hangs is
    killed after 60 s by a timer instead."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        proc.wait()
    finally:
        killer.cancel()
    return time.perf_counter() - t0


def alternate(pairs: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median wall time of each command, run in turn ``runs`` times (one warm-up round first)."""
    times: dict[str, list[float]] = {name: [] for name in pairs}
    for argv in pairs.values():
        wall(argv)  # page cache, .pyc files
    for _ in range(runs):
        for name, argv in pairs.items():
            times[name].append(wall(argv))
    return {name: statistics.median(t) for name, t in times.items()}


def heavy_modules(argv: Sequence[str]) -> list[str]:
    """Top-level packages of :data:`HEAVY` that ``argv`` (a python command) imports."""
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    err = subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False).stderr
    seen = {m.group(1).split(".")[0] for m in re.finditer(r"\|\s+(\S+)$", err, re.M)}
    return sorted(seen & set(HEAVY))


def load() -> str:
    """The 1-minute load average, as text."""
    return f"{os.getloadavg()[0]:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per median (default 5)")
    parser.add_argument(
        "--tree", type=Path, help="also time iotop_plus from this checkout (an older commit)"
    )
    parser.add_argument(
        "--first-figures", type=int, default=0, metavar="N", help="also the TUI's, N starts"
    )
    args = parser.parse_args(argv)
    if args.tree is not None:
        subprocess.run([PYTHON, "-m", "compileall", "-q", str(args.tree)], check=True)
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(REPO / "iotop_plus")], check=True)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as state:
        snapshot = [SCRIPT, "--state-dir", state, "snapshot", "-c", "1", "-i", "0.1", "-f", "json"]
        commands = {
            "python -c pass": [PYTHON, "-c", "pass"],
            "iotop-plus --version": [SCRIPT, "--version"],
            "iotop-plus --help": [SCRIPT, "--help"],
            "import textual.app": [PYTHON, "-c", "import textual.app"],
            "snapshot -c1 -i0.1": snapshot,
        }
        if args.tree is not None:  # the same commands run from the older checkout
            old = ["env", f"PYTHONPATH={args.tree}"]
            commands["before: --version"] = [*old, SCRIPT, "--version"]
            commands["before: snapshot"] = [*old, *snapshot]
        iostat = shutil.which("iostat")
        if iostat:
            commands["iostat -dx -o JSON"] = [iostat, "-d", "-x", "-o", "JSON"]
        else:
            print("note: iostat missing (apt-get install sysstat): no peer row")
        before = load()
        med = alternate(commands, args.runs)
        after = load()
        print(f"median of {args.runs} alternating runs; load average {before} -> {after}")
        for name, seconds in med.items():
            print(f"  {name:<24} {seconds * 1000:8.1f} ms")
        bare, textual = med["python -c pass"], med["import textual.app"]
        snap = med["snapshot -c1 -i0.1"] - 0.1
        print(
            f"--version / python -c pass = {med['iotop-plus --version'] / bare:.2f}x (target <= 2x)"
        )
        print(f"--help / python -c pass = {med['iotop-plus --help'] / bare:.2f}x")
        print(
            f"snapshot minus interval = {snap * 1000:.1f} ms = {snap / textual:.2f}x "
            "import textual.app (target <= 0.4x, aim 0.3x)"
        )
        if args.tree is not None:
            old_snap = med["before: snapshot"] - 0.1
            print(
                f"before: --version / python -c pass = "
                f"{med['before: --version'] / bare:.2f}x; snapshot minus interval = "
                f"{old_snap * 1000:.1f} ms = {old_snap / textual:.2f}x import textual.app"
            )
        if iostat:
            peer = med["iostat -dx -o JSON"]
            print(f"snapshot minus interval / iostat = {snap / peer:.1f}x")
        for name, cmd in (("--version", [SCRIPT, "--version"]), ("snapshot", snapshot)):
            heavy = heavy_modules([PYTHON, *cmd] if cmd[0] == SCRIPT else cmd)
            print(f"{name} imports {', '.join(heavy) if heavy else 'none'} of {', '.join(HEAVY)}")
        if args.first_figures:
            first_figures(args.first_figures, Path(state), args.tree)
    return 0


def first_figures(starts: int, state: Path, tree: Path | None) -> None:
    """The TUI's first figures against ``import textual.app`` and bpytop (see the docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_light import bpytop, first_figures, median, textual_import
    from bench_tui import ours

    from tests.support.tmux import TmuxSession

    mine = ours()
    argv = (*mine.argv, "--state-dir", str(state))
    apps = {"iotop-plus": replace(mine, argv=argv)}
    if tree is not None:
        apps["iotop-plus (before)"] = replace(mine, argv=argv, env=(("PYTHONPATH", str(tree)),))
    peer = bpytop(state / "bpytop-home")
    if peer is None:
        print("MISSING PEER: bpytop (make bench-peers)")
    else:
        apps["bpytop"] = peer
    times: dict[str, list[float | None]] = {name: [] for name in ["import textual.app", *apps]}
    before = load()
    with TmuxSession(120, 36) as tmux:
        for _ in range(starts):
            times["import textual.app"].append(textual_import())
            for name, app in apps.items():
                times[name].append(first_figures(tmux, app))
    meds = {name: median(values) for name, values in times.items()}
    print(f"first figures, median of {starts} alternating starts; load {before} -> {load()}")
    textual = meds["import textual.app"]
    for name, value in meds.items():
        ratio = f" = {value / textual:.2f}x import textual.app" if value and textual else ""
        print(f"  {name:<22} {'-' if value is None else f'{value * 1000:.0f} ms'}{ratio}")
    print("  (aim: iotop-plus <= 1.5x import textual.app)")


if __name__ == "__main__":
    sys.exit(main())
