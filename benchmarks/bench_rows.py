"""The TUI's CPU at 200 and 2,000 devices, btop in the same run.

Prints figures; never asserts. Each row is measured as ``bench_light.py`` measures the 8-device
row: the real console script in tmux at 120x36, ``-i 1``, every device shown (``--all``),
default screen (charts shown); CPU ticks of the process (and its children) over ``--seconds``
(60) after ``--settle`` (10) s; iotop-plus, iotop-plus from each ``--tree`` (an older checkout,
for the figures before a change) and btop alternate, ``--rounds`` (3) rounds each, median per app,
with the load average beside every round.

- up to ``--loop-max`` (256) devices: REAL loop devices on sparse ext2 files, mounted
  read-only, under a read-only fio load of about 5 IOPS per device (``bench_tui.loop_host``);
  btop sees them;
- above: a SyntheticTree (``--proc-root``/``--sys-root``) advanced once a second; btop cannot
  read a synthetic tree, so it runs on the real host as the load reference.

Needs root, losetup, mkfs.ext2, fio and tmux. Usage: ``.venv/bin/python benchmarks/bench_rows.py
[--devices 200,2000] [--rounds 3] [--seconds 60] [--settle 10] [--tree /tmp/old-checkout]``;
``--tree before --tree after --trees-only`` compares two checkouts alone (say, ``git archive``
of HEAD with and without one change), when the working tree holds others' changes too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_light import btop, cpu_round, load, median
from bench_tui import MAX_LOOP_DEVICES, REPO, App, loop_host, synthetic_host
from unwind import unwind_on_signals

from tests.support.tmux import TmuxSession


def ours(name: str, extra: Sequence[str], state: Path, tree: Path | None = None) -> App:
    """iotop-plus (from ``tree`` when given) with every device shown, at 1 s."""
    script = REPO / ".venv" / "bin" / "iotop-plus"
    return App(
        name=name,
        argv=(str(script), "--state-dir", str(state), "-i", "1", "--all", *extra),
        env=(("PYTHONPATH", str(tree)),) if tree else (),
        device_row=r"\b(sd[a-z]+|loop\d+|vda)\b",
        figures_row=r"\b(sd[a-z]+|loop\d+|vda)\s+\d+\.\d\d\b",
    )


def measure_row(apps: Sequence[App], rounds: int, settle: float, seconds: float) -> None:
    """Alternate the apps' CPU rounds; print each round, the medians and the ratios to btop."""
    cpu: dict[str, list[float | None]] = {a.name: [] for a in apps}
    with TmuxSession(120, 36) as tmux:
        for r in range(rounds):
            for app in apps:
                pct = cpu_round(tmux, app, settle, seconds)
                cpu[app.name].append(pct)
                shown = "-" if pct is None else f"{pct:.2f} %"
                print(f"  round {r + 1} {app.name:<20} CPU {shown:>8}  load {load()}", flush=True)
    meds = {name: median(values) for name, values in cpu.items()}
    peer = meds.get("btop")
    for name, value in meds.items():
        shown = "-" if value is None else f"{value:.2f} %"
        ratio = f"  ({value / peer:.2f}x btop)" if value is not None and peer else ""
        print(f"  median {name:<20} {shown:>8}{ratio}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print."""
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", default="200,2000", help="comma-separated device counts")
    parser.add_argument("--rounds", type=int, default=3, help="CPU rounds per app (default 3)")
    parser.add_argument("--seconds", type=float, default=60.0, help="CPU window (default 60)")
    parser.add_argument("--settle", type=float, default=10.0, help="wait before it (default 10)")
    parser.add_argument(
        "--tree",
        type=Path,
        action="append",
        default=[],
        help="also run iotop_plus from this checkout (repeatable: before and after a change)",
    )
    parser.add_argument(
        "--trees-only",
        action="store_true",
        help="run only the --tree checkouts (and btop), not this working tree, which other "
        "changes in progress may share",
    )
    parser.add_argument(
        "--loop-max",
        type=int,
        default=MAX_LOOP_DEVICES,
        help="loop devices up to this count, a synthetic tree above (0: always synthetic, "
        "which leaves the host's loop numbers to the tests running beside)",
    )
    args = parser.parse_args(argv)
    missing = [c for c in ("tmux", "losetup", "mkfs.ext2", "fio") if shutil.which(c) is None]
    if os.geteuid() != 0 or missing:
        print(f"cannot measure: needs root and {', '.join(missing) or 'nothing else'}")
        return 1
    for tree in [REPO / "iotop_plus", *args.tree]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
    print(f"terminal 120x36, charts shown, -i 1, --all; load at start {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as tmp:
        work = Path(tmp)
        peer = btop(work / "btop-home")
        if peer is None:
            print("MISSING PEER: btop (apt-get install btop, or make bench-peers)")
        for n in (int(x) for x in args.devices.split(",") if x.strip()):
            with ExitStack() as stack:
                host = work / f"host{n}"
                host.mkdir()
                extra: list[str] = []
                if n <= args.loop_max:
                    names = stack.enter_context(loop_host(n, host))
                    print(f"{n} devices: loop devices {names[0]}..{names[-1]} under fio")
                else:
                    tree = stack.enter_context(synthetic_host(n, host))
                    extra = ["--proc-root", str(tree.roots.proc), "--sys-root", str(tree.roots.sys)]
                    print(f"{n} devices: synthetic tree (btop on the real host, as load reference)")
                apps = [] if args.trees_only else [ours("iotop-plus", extra, work / "state")]
                for tree in args.tree:
                    label = "before" if len(args.tree) == 1 else tree.name
                    apps.append(ours(f"iotop-plus ({label})", extra, work / "state", tree))
                if peer is not None:
                    apps.append(peer)
                measure_row(apps, args.rounds, args.settle, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
