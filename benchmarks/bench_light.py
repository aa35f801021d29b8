"""The TUI's CPU and first figures beside btop's, both measured the same way in the same run.

Prints figures; never asserts. One run:

- attaches 8 loop devices (sparse files in a temp dir, ext2, mounted read-only) and puts a
  read-only fio load on them (``--iops`` per device, default 100);
- **CPU**: the real console script in tmux at 120x36, ``-i 1``, the loop devices named on the
  command line, default screen (charts shown); CPU ticks of the process (and its children) over
  ``--seconds`` (60) after ``--settle`` (10) s; iotop-plus and btop alternate, ``--rounds`` (3)
  rounds each, median per app; the load average is printed with every figure, and the ratio to
  btop from the same rounds is the figure to judge (5 other people share the 2 cores); each
  round of a program with several threads also prints each thread's CPU in ms a second (from
  ``/proc/PID/task/TID/schedstat``; ``main`` is the main thread, the others by thread id);
- **first figures**: time from Enter to the first screen whose device row shows numbers,
  alternated with a fresh ``python -c 'import textual.app'`` and bpytop's first frame; the import
  is timed twice, as a bare subprocess and started in tmux the way the apps are (a line on the
  alternate screen once it is done), and the ratio is printed against both
  (median of ``--starts``, default 5); with each, the CPU the program had used by then, and
  the CPU ratio to the import started in tmux (read the same way, while it runs; the bare
  import's CPU also counts the interpreter's exit): the seconds follow the host's load (a
  start that waits for a core waits in them), the CPU much less;
- ``--charts hidden`` measures at 100x36, where iotop-plus shows only the table; atop (1 s)
  takes its CPU rounds too unless ``--skip atop``.

btop and atop come from apt, bpytop from ``$IOTOP_PLUS_BENCH_PEERS/bin`` (``make bench-peers``
installs them); a missing peer is printed as missing, never skipped silently. Needs root, losetup,
mkfs.ext2, fio and tmux. Usage: ``.venv/bin/python benchmarks/bench_light.py [--seconds 60]
[--settle 10] [--rounds 3] [--starts 5] [--charts shown|hidden] [--before DIR]
[--profile FILE]``; ``--profile FILE`` samples iotop-plus with py-spy instead of the CPU rounds
(collapsed stacks, for where the time goes); ``--before DIR`` (a ``git archive`` of an older
commit) adds that tree's iotop-plus to the same CPU rounds and first-figure starts, for
before/after figures on one load; ``--history-minutes 1 --settle 75`` measures our TUIs once
their history ring is full, as on a host where the TUI was left running (each frame then drops
the oldest one, which no first-minute round sees).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui import (
    CLK_TCK,
    HIDDEN_CHARTS_SIZE,
    REPO,
    App,
    cpu_ticks,
    loop_host,
    start,
    stop,
)
from unwind import unwind_on_signals

from tests.support.tmux import TmuxError, TmuxSession

DEVICES = 8
PEERS = Path(os.environ.get("IOTOP_PLUS_BENCH_PEERS", "/opt/iotop-peers"))


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as text."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


STATE_DIR = Path(tempfile.gettempdir()) / "bench-light-state"
"""iotop-plus's state directory in the runs (set to one in the run's temp dir): never
/var/lib/iotop-plus."""
BEFORE = "before"
"""The name of ``--before DIR``'s iotop-plus in the printed figures."""

#: ``--history-minutes M``: our TUIs read a config that keeps M minutes of history, so a
#: ``--settle`` longer than that measures them once the ring is full (the steady state of a
#: TUI left running; every frame drops one then). None: the default 15 minutes.
CONFIG_HOME: Path | None = None

#: ``--tree DIR``: run iotop_plus from another checkout (``git archive`` of an older commit),
#: for the figures before a change, in the same run as the peers.
TREE: Path | None = None


def ours(names: Sequence[str], tree: Path | None = None, name: str = "iotop-plus") -> App:
    """iotop-plus, the console script, the loop devices named on its command line (from
    ``tree``, else ``TREE``, else this checkout)."""
    script = REPO / ".venv" / "bin" / "iotop-plus"
    tree = tree or TREE
    return App(
        name=name,
        argv=(str(script), "-i", "1", "--state-dir", str(STATE_DIR), *names),
        env=(
            *((("PYTHONPATH", str(tree)),) if tree else ()),
            *((("XDG_CONFIG_HOME", str(CONFIG_HOME)),) if CONFIG_HOME else ()),
        ),
        device_row=rf"\b{names[0]}\b",
        figures_row=rf"\b{names[0]}\s+\d+\.\d\d\b",
    )


def btop(home: Path) -> App | None:
    """btop at a 1 s update, with its disks box (None when it is not installed)."""
    path = shutil.which("btop")
    if path is None:
        return None
    conf = home / ".config" / "btop"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "btop.conf").write_text(
        'update_ms = 1000\nshown_boxes = "cpu mem net proc"\nshow_disks = True\n'
    )
    return App(name="btop", argv=(path,), env=(("HOME", str(home)),), device_row=r"disks")


def atop() -> App | None:
    """atop at a 1 s interval (None when it is not installed); its DSK lines show the disks."""
    path = shutil.which("atop")
    if path is None:
        return None
    return App(name="atop", argv=(path, "1"), device_row=r"\b(DSK|LVM)\b")


def bpytop(home: Path) -> App | None:
    """bpytop at a 1 s update from the peers' venv (None when it is not there)."""
    path = PEERS / "bin" / "bpytop"
    if not path.exists():
        return None
    conf = home / ".config" / "bpytop"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "bpytop.conf").write_text(
        "update_ms=1000\nshow_disks=True\nshow_io_stat=True\ncheck_temp=False\n"
    )
    return App(name="bpytop", argv=(str(path),), env=(("HOME", str(home)),), device_row=r"─root─")


@contextmanager
def fio_load(names: Sequence[str], iops: int) -> Iterator[None]:
    """A read-only random-read fio job per device at ``iops``, until exit."""
    argv = ["fio", "--readonly", "--output=/dev/null"]
    for name in names:
        argv += [
            f"--name={name}",
            f"--filename=/dev/{name}",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=psync",
            f"--rate_iops={iops}",
            "--time_based",
            "--runtime=86400",
        ]
    fio = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        fio.terminate()
        try:
            fio.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fio.kill()
            fio.wait()


def cpu_round(tmux: TmuxSession, app: App, settle: float, seconds: float) -> float | None:
    """Percent of one core ``app`` used over ``seconds`` after ``settle`` (None: no screen)."""
    try:
        launched, _, _ = start(tmux, app, ())
    except TmuxError as exc:
        print(f"  {app.name}: no first screen: {str(exc).splitlines()[0]}")
        return None
    try:
        pid = tmux.program_pid(launched)
        time.sleep(settle)
        t0, c0, th0 = time.monotonic(), cpu_ticks(pid), thread_ns(pid)
        time.sleep(seconds)
        t1, c1, th1 = time.monotonic(), cpu_ticks(pid), thread_ns(pid)
    finally:
        stop(tmux, launched)
    if len(th1) > 1:  # where a multi-threaded app's time went, thread by thread
        spent = {tid: (ns - th0.get(tid, 0)) / 1e6 / (t1 - t0) for tid, ns in th1.items()}
        print(
            f"    {app.name} threads, ms of CPU a second: "
            + ", ".join(
                f"{'main' if tid == pid else tid} {ms:.2f}"
                for tid, ms in sorted(spent.items(), key=lambda kv: -kv[1])
            )
        )
    return (c1 - c0) / CLK_TCK / (t1 - t0) * 100


def thread_ns(pid: int) -> dict[int, int]:
    """Nanoseconds on a CPU of each thread of ``pid`` (``/proc/PID/task/TID/schedstat``)."""
    spent: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with suppress(OSError, ValueError, IndexError):
            spent[int(task.name)] = int((task / "schedstat").read_text().split()[0])
    return spent


def profile_round(tmux: TmuxSession, app: App, settle: float, seconds: float, out: Path) -> None:
    """Sample ``app`` with py-spy for ``seconds`` after ``settle``, into ``out`` (collapsed
    stacks, one line per stack with its sample count; idle samples left out)."""
    spy = shutil.which("py-spy") or str(REPO / ".venv" / "bin" / "py-spy")
    launched, _, _ = start(tmux, app, ())
    try:
        pid = tmux.program_pid(launched)
        time.sleep(settle)
        argv = [spy, "record", "-p", str(pid), "-d", f"{seconds:g}", "-r", "200", "-t"]
        subprocess.run([*argv, "-f", "raw", "-o", str(out)], check=True, stdout=subprocess.DEVNULL)
    finally:
        stop(tmux, launched)
    print(f"  profile of {app.name} ({seconds:g} s after {settle:g} s) in {out}, load {load()}")


def first_figures(tmux: TmuxSession, app: App) -> float | None:
    """Seconds from Enter to ``app``'s first figures (None: none within 30 s)."""
    return figures_and_cpu(tmux, app)[0]


def figures_and_cpu(tmux: TmuxSession, app: App) -> tuple[float | None, float | None]:
    """Seconds from Enter to ``app``'s first figures, and the CPU seconds the program had
    used when they were seen (all its threads, ended ones too, and its children; in clock
    ticks, 10 ms steps). The CPU does not count the time spent waiting for a core, so it moves
    far less with the host's load than the seconds do. (None, None): no figures in 30 s."""
    try:
        launched, _, figures = start(tmux, app, ())
    except TmuxError:
        return None, None
    try:
        cpu: float | None = cpu_ticks(tmux.program_pid(launched, timeout=1)) / CLK_TCK
    except TmuxError:
        cpu = None
    stop(tmux, launched)
    return figures, cpu


def textual_import() -> float:
    """Seconds a fresh interpreter takes to ``import textual.app``."""
    return textual_import_and_cpu()[0]


def textual_import_and_cpu() -> tuple[float, float]:
    """Seconds a fresh interpreter takes to ``import textual.app``, and its CPU seconds."""
    python = REPO / ".venv" / "bin" / "python"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([str(python), "-c", "import textual.app"], check=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return seconds, cpu


#: ``import textual.app`` started the way the apps are (a shell in tmux, Enter, the screen polled
#: every 5 ms until it shows a line on the alternate screen), so the tmux round trips and the
#: shell's start weigh on both sides of the first-figures ratio.
TEXTUAL_IN_TMUX = App(
    name="import textual.app (tmux)",
    argv=(
        str(REPO / ".venv" / "bin" / "python"),
        "-c",
        "import sys, textual.app; sys.stdout.write('\\x1b[?1049htextual imported\\n');"
        " sys.stdout.flush(); import termios, tty; mode = termios.tcgetattr(0);"
        " tty.setcbreak(0); sys.stdin.read(1); termios.tcsetattr(0, termios.TCSADRAIN, mode);"
        " sys.stdout.write('\\x1b[?1049l')",
    ),
    device_row=r"textual imported",
)


def median(values: Sequence[float | None]) -> float | None:
    """Median of the values that were measured."""
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def measure_cpu(apps: Sequence[App], size: tuple[int, int], args: argparse.Namespace) -> None:
    """Alternate the apps' CPU rounds and print each round and the medians."""
    cpu: dict[str, list[float | None]] = {a.name: [] for a in apps}
    with TmuxSession(*size) as tmux:
        for r in range(args.rounds):
            for app in apps:
                pct = cpu_round(tmux, app, args.settle, args.seconds)
                cpu[app.name].append(pct)
                shown = "-" if pct is None else f"{pct:.2f} %"
                print(f"  round {r + 1} {app.name:<10} CPU {shown:>8}  load {load()}", flush=True)
    meds = {name: median(v) for name, v in cpu.items()}
    print(f"CPU, median of {args.rounds} rounds ({args.seconds:g} s after {args.settle:g} s):")
    for name, value in meds.items():
        print(f"  {name:<10} {'-' if value is None else f'{value:.2f} %'}")
    mine, peer = meds.get("iotop-plus"), meds.get("btop")
    for name, value in meds.items():
        if name not in ("iotop-plus", "btop") and mine is not None and value:
            print(f"  iotop-plus / {name} = {mine / value:.2f}x")
    before = meds.get(BEFORE)
    if before is not None and peer:
        print(f"  {BEFORE} / btop = {before / peer:.2f}x")
    if mine is not None and peer:
        ratios = [
            a / b
            for a, b in zip(cpu["iotop-plus"], cpu.get("btop", []), strict=False)
            if a is not None and b
        ]
        print(
            f"  iotop-plus / btop = {mine / peer:.2f}x (per round: "
            + ", ".join(f"{x:.2f}x" for x in ratios)
            + "); target <= btop's, never above 1 %"
        )


def measure_first_figures(apps: Sequence[App], size: tuple[int, int], starts: int) -> None:
    """Alternate first-figure starts with ``import textual.app``; print medians and ratios."""
    names = ["import textual.app", TEXTUAL_IN_TMUX.name, *(a.name for a in apps)]
    times: dict[str, list[float | None]] = {name: [] for name in names}
    cpus: dict[str, list[float | None]] = {name: [] for name in names}

    def took(name: str, seconds: float | None, cpu: float | None) -> None:
        times[name].append(seconds)
        cpus[name].append(cpu)

    with TmuxSession(*size) as tmux:
        for _ in range(starts):
            took("import textual.app", *textual_import_and_cpu())
            took(TEXTUAL_IN_TMUX.name, *figures_and_cpu(tmux, TEXTUAL_IN_TMUX))
            for app in apps:
                took(app.name, *figures_and_cpu(tmux, app))
    meds = {name: median(v) for name, v in times.items()}
    cpu_meds = {name: median(v) for name, v in cpus.items()}
    print(f"first figures, median of {starts} starts (load {load()}), and the CPU used by then:")
    for name, value in meds.items():
        cpu = cpu_meds[name]
        print(
            f"  {name:<18} {'-' if value is None else f'{value * 1000:.0f} ms'}"
            f"{'' if cpu is None else f'  (CPU {cpu * 1000:.0f} ms)'}"
        )
    mine, textual = meds.get("iotop-plus"), meds["import textual.app"]
    if mine is not None and textual:
        print(f"  iotop-plus / import textual.app = {mine / textual:.2f}x (aim <= 1.5x)")
    before = meds.get(BEFORE)
    if before is not None and textual:
        print(f"  {BEFORE} / import textual.app = {before / textual:.2f}x")
    same_way = meds[TEXTUAL_IN_TMUX.name]
    if same_way:
        for name in ("iotop-plus", BEFORE):
            if meds.get(name) is not None:
                print(f"  {name} / {TEXTUAL_IN_TMUX.name} = {meds[name] / same_way:.2f}x")
    # Against the import started in tmux: read the same way, while it runs. The bare one's
    # CPU also counts the interpreter's exit.
    textual_cpu = cpu_meds[TEXTUAL_IN_TMUX.name]
    if textual_cpu:
        for name in ("iotop-plus", BEFORE):
            cpu = cpu_meds.get(name)
            if cpu is not None:
                print(f"  CPU: {name} / {TEXTUAL_IN_TMUX.name} = {cpu / textual_cpu:.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print."""
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="CPU window (default 60)")
    parser.add_argument("--settle", type=float, default=10.0, help="wait before it (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="CPU rounds per app (default 3)")
    parser.add_argument("--starts", type=int, default=5, help="first-figure starts (default 5)")
    parser.add_argument("--iops", type=int, default=100, help="fio IOPS per device (default 100)")
    parser.add_argument("--charts", choices=("shown", "hidden"), default="shown")
    parser.add_argument("--skip", default="", help="comma-separated: cpu, first, atop")
    parser.add_argument("--tree", type=Path, help="run iotop_plus from this checkout instead")
    parser.add_argument(
        "--profile",
        type=Path,
        help="instead of the CPU rounds, sample iotop-plus with py-spy (pip install py-spy) "
        "for --seconds after --settle and write its collapsed stacks to this file",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="also measure iotop_plus from this checkout (a `git archive` of an older commit) "
        "in the same CPU rounds and first-figure starts, named 'before'",
    )
    parser.add_argument(
        "--history-minutes",
        type=float,
        help="our TUIs keep this many minutes of history (>= 1); with a longer --settle, "
        "they are measured once their history ring is full",
    )
    args = parser.parse_args(argv)
    global TREE
    TREE = args.tree
    if TREE is not None:
        print(f"iotop_plus from {TREE}")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(TREE)], check=True)
    if args.before is not None:
        print(f"before: iotop_plus from {args.before}")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.before)], check=True)
    missing = [c for c in ("tmux", "losetup", "mkfs.ext2", "fio") if shutil.which(c) is None]
    if os.geteuid() != 0 or missing:
        print(f"cannot measure: needs root and {', '.join(missing) or 'nothing else'}")
        return 1
    size = HIDDEN_CHARTS_SIZE if args.charts == "hidden" else (120, 36)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "iotop_plus")], check=True)
    print(f"terminal {size[0]}x{size[1]}, charts {args.charts}; load at start {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-light-") as tmp:
        work = Path(tmp)
        (work / "host").mkdir()
        global STATE_DIR, CONFIG_HOME
        STATE_DIR = work / "state"
        if args.history_minutes is not None:
            CONFIG_HOME = work / "config"
            (CONFIG_HOME / "iotop-plus").mkdir(parents=True)
            (CONFIG_HOME / "iotop-plus" / "config.toml").write_text(
                f"history_minutes = {float(args.history_minutes)}\n"
            )
            print(f"our TUIs keep {args.history_minutes:g} minutes of history")
        peer_btop, peer_bpytop = btop(work / "btop-home"), bpytop(work / "bpytop-home")
        peer_atop = atop()
        if peer_btop is None:
            print("MISSING PEER: btop (apt-get install btop, or make bench-peers)")
        if peer_atop is None:
            print("MISSING PEER: atop (apt-get install atop, or make bench-peers)")
        if peer_bpytop is None:
            print(f"MISSING PEER: bpytop (not in {PEERS}/bin; make bench-peers)")
        with loop_host(DEVICES, work / "host") as names, fio_load(names, args.iops):
            print(f"{DEVICES} loop devices under fio ({args.iops} IOPS each): {' '.join(names)}")
            skip = set(args.skip.split(","))
            if "atop" in skip:
                peer_atop = None
            if args.profile is not None:
                with TmuxSession(*size) as tmux:
                    profile_round(tmux, ours(names), args.settle, args.seconds, args.profile)
            elif "cpu" not in skip:
                before = [ours(names, args.before, BEFORE)] if args.before is not None else []
                measure_cpu(
                    [ours(names), *before, *filter(None, [peer_btop, peer_atop])], size, args
                )
            if "first" not in skip:
                with suppress(KeyboardInterrupt):
                    before = [ours(names, args.before, BEFORE)] if args.before is not None else []
                    measure_first_figures(
                        [ours(names), *before, *filter(None, [peer_bpytop])], size, args.starts
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
