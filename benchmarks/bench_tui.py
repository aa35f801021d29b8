"""Measure the real iotop-plus TUI from the outside, in tmux, against glances and bpytop.

Prints figures; never asserts. For each device count it measures, per app:

- **first frame**: time from pressing Enter at a shell prompt to the first screen that shows a
  device row (capture-pane polling; median of ``--runs`` starts);
- **first figures**: the same, to the first screen where that row shows numbers, not dashes
  (peers show figures with their first rows);
- **CPU%** of one core over ``--seconds`` at a 1 s refresh interval, from /proc/PID/stat
  (utime+stime of the app, its reaped children and its live descendants);
- **peak RSS**: VmHWM from /proc/PID/status at the end of the CPU run;
- **key latency**: time from a key press (Down/Up in turn) to the screen changing. The key is
  pressed just after a spontaneous refresh was seen, so the next refresh is about a second away
  and a change inside that window is the key's answer. For iotop-plus it is measured again with
  the display frozen (space), where no refresh can be mistaken for the answer.

Device counts up to 256 are REAL loop devices on sparse files in a temp dir (an ext2 made in
the file before attaching, mounted read-only so bpytop's disks box lists them too), with a
rate-limited read-only fio load spread over all of them. Larger counts use a SyntheticTree
(``--proc-root``/``--sys-root``), advanced once a second; glances and bpytop cannot read a
synthetic tree, so only iotop-plus is measured there.

glances and bpytop come from a separate venv (``$IOTOP_PLUS_BENCH_PEERS`` or /work/benchvenv:
``python3 -m venv /work/benchvenv && /work/benchvenv/bin/pip install glances bpytop``); an app
that is missing is skipped with a note.

Usage: ``.venv/bin/python benchmarks/bench_tui.py [--quick] [--devices 8,200,2000]
[--seconds 30] [--runs 5] [--before DIR [--rounds 2]]``; ``--before DIR`` (a ``git archive``
of an older commit) measures that tree's iotop-plus too, as ``before``, and ``--rounds N``
measures every app N times, alternated, for before/after figures on one load. Needs root,
losetup and tmux for the loop-device rows.
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loop_nodes import loop_nodes, remove_made  # noqa: E402
from unwind import unwind_on_signals  # noqa: E402

from tests.support.synthetic import SyntheticTree  # noqa: E402
from tests.support.tmux import Launched, TmuxError, TmuxSession, descendants  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
WIDTH, HEIGHT = 120, 36
#: ``--charts hidden``: a terminal this size puts iotop-plus in narrow mode, where only the
#: table is on screen (charts and side panel are tabs of their own), so no chart is drawn.
HIDDEN_CHARTS_SIZE = (100, 36)
#: Above this many devices the benchmark uses a synthetic tree instead of loop devices.
MAX_LOOP_DEVICES = 256


@dataclass(frozen=True)
class App:
    """One program to measure and how to drive it."""

    name: str
    """Short name printed in the table."""
    argv: tuple[str, ...]
    """Command line, without the tree options."""
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment for the command."""
    device_row: str = r"\bvda\b"
    """Regex that matches once a device row is on screen (formatted with nothing)."""
    keys: tuple[str, ...] = ("Down", "Up")
    """Keys whose answer is timed, pressed in turn (Down then Up: the cursor always moves)."""
    pause_key: str | None = None
    """Key that freezes the display, for a second key timing with no refreshes in the way."""
    show_all: str | None = None
    """Key that shows loop devices when they are hidden by default."""
    reads_synthetic: bool = False
    """Whether the app can be pointed at a synthetic /proc + /sys tree."""
    figures_row: str | None = None
    """Regex that matches once a device row shows figures; None: figures come with the row."""


@dataclass(frozen=True)
class Figures:
    """What one app measured at one device count."""

    app: str
    """The app's short name."""
    devices: int
    """How many devices the host had (loop or synthetic)."""
    first_frame_ms: float | None
    """Median time to the first frame with a device row."""
    first_figures_ms: float | None
    """Median time to the first frame whose device row shows figures."""
    cpu_pct: float | None
    """CPU of one core, percent, over the measured window."""
    rss_mb: float | None
    """Peak resident set (VmHWM), MiB."""
    key_ms: float | None
    """Median time from a key press to the screen changing."""
    paused_key_ms: float | None = None
    """The same with the display frozen (no refresh can be mistaken for the answer)."""
    notes: tuple[str, ...] = field(default=())
    """Anything that went wrong or qualifies a figure."""


# -- processes ---------------------------------------------------------------------------


def cpu_ticks(pid: int) -> int:
    """utime+stime of ``pid``, its reaped children and its live descendants, in ticks."""
    total = 0
    for i, p in enumerate([pid, *descendants(pid)]):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is state (field 3); utime..cstime are fields 14..17.
        total += int(fields[11]) + int(fields[12])
        if i == 0:
            total += int(fields[13]) + int(fields[14])
    return total


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM of ``pid`` plus the current VmRSS of its descendants, in MiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    kb = int(match.group(1)) if match else 0
    for child in descendants(pid):
        with suppress(OSError):
            m = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{child}/status").read_text())
            kb += int(m.group(1)) if m else 0
    return kb / 1024


# -- driving one app ---------------------------------------------------------------------


def start(tmux: TmuxSession, app: App, extra: Sequence[str]) -> tuple[Launched, float, float]:
    """Launch ``app``, wait for its first device row, then for figures in it.

    Returns (launched, seconds to the row, seconds to figures).
    """
    pattern = re.compile(app.device_row, re.M)
    launched = tmux.launch([*app.argv, *extra], env=dict(app.env))
    t0 = time.monotonic()
    tmux.wait_until(
        lambda s: pattern.search(s) is not None and tmux_alt(tmux),
        timeout=30,
        interval=0.005,
        what=f"{app.name} device row",
    )
    row = time.monotonic() - t0
    if app.figures_row is None:
        return launched, row, row
    figures = re.compile(app.figures_row, re.M)
    tmux.wait_until(
        lambda s: figures.search(s) is not None, timeout=30, interval=0.005, what="figures"
    )
    return launched, row, time.monotonic() - t0


def tmux_alt(tmux: TmuxSession) -> bool:
    """Whether the pane is on the alternate screen (the app, not the shell, is drawing)."""
    return tmux.pane_value("#{alternate_on}") == "1"


def stop(tmux: TmuxSession, launched: Launched) -> None:
    """Quit the app with q, then Ctrl-C, then SIGKILL, and wait for the shell prompt."""
    for keys in (["q"], ["C-c"]):
        tmux.send_keys(*keys)
        with suppress(TmuxError):
            tmux.wait_exit(launched, timeout=5)
            return
    with suppress(TmuxError, ProcessLookupError, ValueError):
        os.kill(tmux.program_pid(launched, timeout=1), 9)
    tmux.wait_exit(launched, timeout=5)
    tmux.send_text("reset")
    tmux.send_keys("Enter")
    time.sleep(1)


def changed_from(before: str) -> Callable[[str], bool]:
    """A screen predicate: true once the screen differs from ``before``."""
    return lambda screen: screen != before


def key_latencies(tmux: TmuxSession, keys: Sequence[str], trials: int) -> list[float]:
    """Seconds from pressing a key to the screen changing, one per trial (keys in turn)."""
    out: list[float] = []
    for trial in range(trials):
        key = keys[trial % len(keys)]
        before = tmux.capture()
        # Wait for a spontaneous refresh so the next one is about an interval away.
        with suppress(TmuxError):
            tmux.wait_until(changed_from(before), timeout=2.5, interval=0.01)
        time.sleep(0.15)
        before = tmux.capture()
        t0 = time.monotonic()
        tmux.send_keys(key)
        try:
            tmux.wait_until(changed_from(before), timeout=5, interval=0.002)
        except TmuxError:
            continue
        out.append(time.monotonic() - t0)
    return out


def measure(
    app: App,
    devices: int,
    extra: Sequence[str],
    seconds: float,
    runs: int,
    loop_names: Sequence[str],
) -> Figures:
    """All figures for ``app`` on the current host/tree."""
    notes: list[str] = []
    firsts: list[float] = []
    figures: list[float] = []
    with TmuxSession(*SIZE) as tmux:
        for _ in range(runs):
            try:
                launched, took, with_figures = start(tmux, app, extra)
            except TmuxError as exc:
                notes.append("no device row: " + str(exc).split("\n")[0])
                return Figures(app.name, devices, None, None, None, None, None, None, tuple(notes))
            firsts.append(took)
            figures.append(with_figures)
            stop(tmux, launched)
        launched, _, _ = start(tmux, app, extra)
        pid = tmux.program_pid(launched)
        if loop_names:
            # A loop device shows by its name, or (bpytop) by its mount point's name.
            shown = re.compile(rf"\b({loop_names[0]}|mnt0)\b")
            if app.show_all and not shown.search(tmux.capture()):
                tmux.send_keys(app.show_all)
            try:
                tmux.wait_for(shown, timeout=5)
            except TmuxError:
                notes.append(f"{loop_names[0]} not on screen")
        time.sleep(3)  # warm-up: imports done, first samples taken
        t0, c0 = time.monotonic(), cpu_ticks(pid)
        time.sleep(seconds)
        t1, c1 = time.monotonic(), cpu_ticks(pid)
        cpu = (c1 - c0) / CLK_TCK / (t1 - t0) * 100
        rss = peak_rss_mb(pid)
        keys = key_latencies(tmux, app.keys, trials=max(4, 2 * runs))
        if not keys:
            notes.append(f"screen never changed after {app.keys}")
        if keys and max(keys) > 0.8:
            notes.append("a key answer took > 0.8 s: may be a refresh, not the key")
        paused: list[float] = []
        if app.pause_key:
            tmux.send_keys(app.pause_key)
            time.sleep(1.5)  # let a refresh already under way land
            paused = key_latencies(tmux, app.keys, trials=max(4, 2 * runs))
            tmux.send_keys(app.pause_key)
        stop(tmux, launched)
    return Figures(
        app.name,
        devices,
        statistics.median(firsts) * 1000,
        statistics.median(figures) * 1000,
        cpu,
        rss,
        statistics.median(keys) * 1000 if keys else None,
        statistics.median(paused) * 1000 if paused else None,
        tuple(notes),
    )


# -- the hosts -------------------------------------------------------------------------------


def _run(argv: Sequence[str]) -> str:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True).stdout.strip()


@contextmanager
def loop_host(n: int, workdir: Path) -> Iterator[list[str]]:
    """Attach ``n`` loop devices on new ext2-formatted sparse files, mounted read-only.

    A read-only fio load (about 5 IOPS per device) keeps their figures moving. Everything
    is unmounted and detached on exit, whatever happened, and the nodes made for them removed
    (:mod:`loop_nodes`).
    """
    before = loop_nodes()
    attached: list[str] = []
    mounted: list[Path] = []
    fio: subprocess.Popen[bytes] | None = None
    try:
        for i in range(n):
            backing = workdir / f"bench{i}.img"
            with open(backing, "xb") as fh:  # a file we create; never reuse one
                fh.truncate(16 * 1024 * 1024)
            # Format the file, not the device: nothing but our own file is written.
            _run(["mkfs.ext2", "-q", "-F", "-m", "0", str(backing)])
            attached.append(_run(["losetup", "--find", "--show", str(backing)]))
            mnt = workdir / f"mnt{i}"
            mnt.mkdir()
            _run(["mount", "-o", "ro,noatime", attached[-1], str(mnt)])
            mounted.append(mnt)
        if shutil.which("fio"):
            fio = subprocess.Popen(
                [
                    "fio",
                    "--name=bench-bg",
                    "--readonly",
                    "--rw=randread",
                    "--bs=4k",
                    "--direct=1",
                    "--ioengine=psync",
                    "--file_service_type=roundrobin",
                    f"--rate_iops={5 * n}",
                    "--time_based",
                    "--runtime=86400",
                    "--filename=" + ":".join(attached),
                    "--output=/dev/null",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        else:
            for dev in attached:  # at least some I/O so they count as used
                _run(["dd", f"if={dev}", "of=/dev/null", "bs=4k", "count=8", "iflag=direct"])
        yield [d.removeprefix("/dev/") for d in attached]
    finally:
        if fio is not None:
            fio.terminate()
            with suppress(subprocess.TimeoutExpired):
                fio.wait(timeout=10)
            if fio.poll() is None:
                fio.kill()
                fio.wait()
        for mnt in reversed(mounted):
            subprocess.run(["umount", str(mnt)], check=False, capture_output=True)
        for dev in reversed(attached):
            subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
        remove_made(attached, before)
        for i in range(n):
            (workdir / f"bench{i}.img").unlink(missing_ok=True)


@contextmanager
def synthetic_host(n: int, workdir: Path) -> Iterator[SyntheticTree]:
    """A SyntheticTree of ``n`` disks, advanced once a second by a thread until exit."""
    tree = SyntheticTree(workdir / "tree", n)
    stop_event = threading.Event()

    def tick() -> None:
        while not stop_event.wait(1.0):
            tree.advance(1.0)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield tree
    finally:
        stop_event.set()
        thread.join()


# -- the apps --------------------------------------------------------------------------------


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as text."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


STATE_DIR = Path(tempfile.gettempdir()) / "bench-tui-state"
"""The measured TUIs' state directory: never the host's (``/var/lib/iotop-plus`` as root)."""


def ours(tree: Path | None = None, name: str = "iotop-plus") -> App:
    """iotop-plus, the installed console script (its ``iotop_plus`` from ``tree`` if given:
    ``--before DIR``), with a state directory of its own."""
    script = REPO / ".venv" / "bin" / "iotop-plus"
    return App(
        name=name,
        argv=(
            str(script) if script.exists() else "iotop-plus",
            "--interval",
            "1",
            "--state-dir",
            str(STATE_DIR),
        ),
        env=(("PYTHONPATH", str(tree)),) if tree is not None else (),
        device_row=r"\b(vda|sda|nvme0n1|loop\d+)\b",
        figures_row=r"\b(vda|sda|nvme0n1|loop\d+|sd[a-z]+)\s+\d+\.\d\d\b",
        pause_key="Space",
        show_all="a",
        reads_synthetic=True,
    )


def peers(workdir: Path) -> tuple[list[App], list[str]]:
    """glances and bpytop from the peers' venv, and btop; the second list holds skip notes."""
    venv = Path(os.environ.get("IOTOP_PLUS_BENCH_PEERS", "/work/benchvenv"))
    apps: list[App] = []
    notes: list[str] = []
    glances = venv / "bin" / "glances"
    if glances.exists():
        conf = workdir / "glances.conf"
        # Show every disk, loop devices included (the default hides none we need, but say so).
        conf.write_text("[diskio]\ndisable=False\nhide=nothing-is-hidden\n")
        apps.append(
            App(
                name="glances",
                argv=(str(glances), "-t", "1", "-C", str(conf)),
                device_row=r"^(vda|loop\d+)\s",
                keys=("1",),  # toggles the per-CPU view; always redraws the CPU area
            )
        )
    else:
        notes.append(f"glances skipped: not found in {venv} (pip install glances there)")
    bpytop = venv / "bin" / "bpytop"
    if bpytop.exists():
        home = workdir / "bpytop-home"
        (home / ".config" / "bpytop").mkdir(parents=True)
        (home / ".config" / "bpytop" / "bpytop.conf").write_text(
            "update_ms=1000\nshow_disks=True\nshow_io_stat=True\ncheck_temp=False\n"
        )
        apps.append(
            App(
                name="bpytop",
                argv=(str(bpytop),),
                env=(("HOME", str(home)),),
                device_row=r"─root─",
            )
        )
    else:
        notes.append(f"bpytop skipped: not found in {venv} (pip install bpytop there)")
    btop = shutil.which("btop")
    if btop is not None:
        home = workdir / "btop-home"
        (home / ".config" / "btop").mkdir(parents=True)
        (home / ".config" / "btop" / "btop.conf").write_text(
            'update_ms = 1000\nshown_boxes = "cpu mem net proc"\nshow_disks = True\n'
        )
        # btop lists mounted filesystems, not block devices: its disks box title marks the
        # first frame (it is measured for CPU, the figure the aims below compare against).
        apps.append(App(name="btop", argv=(btop,), env=(("HOME", str(home)),), device_row=r"disks"))
    else:
        notes.append("btop skipped: not installed (apt-get install btop)")
    return apps, notes


# -- report ----------------------------------------------------------------------------------


def fmt(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``; a dash of the same width when there is none."""
    if value is None:
        width = re.match(r"\d*", spec)
        return "-".rjust(int(width.group()) if width and width.group() else 1)
    return format(value, spec)


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def report(rows: list[Figures]) -> None:
    print()
    print(
        f"{'app':<11} {'devices':>7} {'first ms':>9} {'figs ms':>8} {'CPU %':>7} {'RSS MiB':>8}"
        f" {'key ms':>7} {'paused':>7}"
    )
    for r in rows:
        print(
            f"{r.app:<11} {r.devices:>7} {fmt(r.first_frame_ms, '9.0f')} "
            f"{fmt(r.first_figures_ms, '8.0f')} "
            f"{fmt(r.cpu_pct, '7.2f')} {fmt(r.rss_mb, '8.1f')} {fmt(r.key_ms, '7.0f')}"
            f" {fmt(r.paused_key_ms, '7.0f')}" + ("   " + "; ".join(r.notes) if r.notes else "")
        )
    for n in sorted({r.devices for r in rows}):
        now, then = (
            [r.cpu_pct for r in rows if r.app == app and r.devices == n and r.cpu_pct is not None]
            for app in ("iotop-plus", "before")
        )
        if now and then:
            print(
                f"  at {n:>5} devices: CPU iotop-plus / before = "
                f"{statistics.median(now) / statistics.median(then):.2f}x (medians of "
                f"{len(now)} and {len(then)} rounds)"
            )
    print()
    print("ratios iotop-plus / peer (lower is better for iotop-plus):")
    for r in rows:
        if r.app == "iotop-plus":
            continue
        mine = next((m for m in rows if m.app == "iotop-plus" and m.devices == r.devices), None)
        if mine is None:
            continue
        print(
            f"  vs {r.app:<8} at {r.devices:>5} devices: first frame "
            f"{ratio(mine.first_frame_ms, r.first_frame_ms)}, first figures "
            f"{ratio(mine.first_figures_ms, r.first_figures_ms)}, CPU "
            f"{ratio(mine.cpu_pct, r.cpu_pct)}, RSS {ratio(mine.rss_mb, r.rss_mb)}, key "
            f"{ratio(mine.key_ms, r.key_ms)}"
        )
    print()
    print("aims: figures <= 350 ms on the quiet 16-core host; on 2 cores <= 1.5x a")
    print("      fresh `import textual.app`; CPU <= btop's at 8 devices, <= 1.0% at 200, <= 5% at")
    print("      2,000; RSS <= 50 MB at 200; key <= 50 ms at 2,000 devices")


def median_seconds(argv: Sequence[str], runs: int = 7) -> float:
    """Median wall time of running ``argv`` to completion."""
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def baselines() -> None:
    """What the first-figures time is judged against, measured now (same machine, same load)."""
    textual = median_seconds([sys.executable, "-c", "import textual.app"])
    bare = median_seconds([sys.executable, "-c", "pass"])
    print(
        f"baseline: fresh `python -c 'import textual.app'` {textual * 1000:.0f} ms "
        f"(bare interpreter {bare * 1000:.0f} ms)"
    )
    iostat = shutil.which("iostat")
    if iostat:
        took = median_seconds([iostat, "-d", "-x"])
        print(f"baseline: `iostat -d -x` (figures since boot) {took * 1000:.0f} ms")
    global TEXTUAL_IMPORT_MS
    TEXTUAL_IMPORT_MS = textual * 1000


TEXTUAL_IMPORT_MS: float | None = None
"""Set by :func:`baselines`: the reference the first-figures time is a ratio to."""


SIZE = (WIDTH, HEIGHT)
"""The terminal size every app is measured in (see ``--charts``)."""


def main(argv: Sequence[str] | None = None) -> int:
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--devices", default="8,200,2000", help="comma-separated device counts")
    parser.add_argument("--seconds", type=float, default=30.0, help="CPU window per app")
    parser.add_argument("--runs", type=int, default=5, help="starts per first-frame median")
    parser.add_argument(
        "--apps",
        default="iotop-plus,glances,bpytop,btop",
        help="comma-separated apps to measure",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="also measure iotop_plus from this checkout (a `git archive` of an older commit), "
        "named 'before', alternated with this tree's in each of the --rounds",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure the apps this many times, alternated"
    )
    parser.add_argument(
        "--charts",
        choices=("shown", "hidden"),
        default="shown",
        help="hidden: measure in a 100x36 terminal, where iotop-plus shows only the table",
    )
    args = parser.parse_args(argv)
    global SIZE
    SIZE = HIDDEN_CHARTS_SIZE if args.charts == "hidden" else (WIDTH, HEIGHT)
    print(f"terminal {SIZE[0]}x{SIZE[1]} (charts {args.charts})")
    # Measure the app as installed: with .pyc files (an editable install has none, and
    # PYTHONDONTWRITEBYTECODE may stop Python writing them), as `make run` prepares it.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "iotop_plus")], check=True)
    ourselves = [ours()]
    if args.before is not None:
        print(f"before: iotop_plus from {args.before}")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.before)], check=True)
        ourselves.append(ours(args.before, "before"))
        wanted_before = {"before"}
    else:
        wanted_before = set()
    counts = [int(x) for x in args.devices.split(",") if x.strip()]
    seconds, runs = (5.0, 2) if args.quick else (args.seconds, args.runs)
    if shutil.which("tmux") is None:
        print("tmux is not installed: nothing to measure")
        return 0
    rows: list[Figures] = []
    baselines()
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        workdir = Path(tmp)
        wanted = {x.strip() for x in args.apps.split(",")} | wanted_before
        apps, notes = peers(workdir)
        for note in notes:
            print("note:", note)
        for n in counts:
            with ExitStack() as stack:
                host = workdir / f"host{n}"
                host.mkdir()
                extra: list[str] = []
                loop_names: list[str] = []
                if n <= MAX_LOOP_DEVICES:
                    if os.geteuid() != 0 or shutil.which("losetup") is None:
                        print(f"note: {n} loop devices skipped: needs root and losetup")
                        continue
                    print(f"attaching {n} loop devices ...", flush=True)
                    loop_names = stack.enter_context(loop_host(n, host))
                    candidates = [a for a in [*ourselves, *apps] if a.name in wanted]
                else:
                    tree = stack.enter_context(synthetic_host(n, host))
                    extra = ["--proc-root", str(tree.roots.proc), "--sys-root", str(tree.roots.sys)]
                    candidates = [
                        a for a in [*ourselves, *apps] if a.reads_synthetic and a.name in wanted
                    ]
                    print(f"synthetic tree of {n} devices (glances/bpytop cannot read it)")
                for app in [a for _ in range(max(1, args.rounds)) for a in candidates]:
                    print(f"measuring {app.name} at {n} devices, load {load()} ...", flush=True)
                    figures = measure(app, n, extra, seconds, runs, loop_names)
                    rows.append(figures)
                    print(
                        f"  first {fmt(figures.first_frame_ms, '.0f')} ms, CPU "
                        f"{fmt(figures.cpu_pct, '.2f')}%, RSS {fmt(figures.rss_mb, '.1f')} MiB, "
                        f"key {fmt(figures.key_ms, '.0f')} ms "
                        f"(paused {fmt(figures.paused_key_ms, '.0f')} ms)"
                        + (" (" + "; ".join(figures.notes) + ")" if figures.notes else ""),
                        flush=True,
                    )
    report(rows)
    if TEXTUAL_IMPORT_MS:
        for r in rows:
            if r.app == "iotop-plus" and r.first_figures_ms is not None:
                print(
                    f"  {r.devices:>5} devices: first figures / import textual.app = "
                    f"{r.first_figures_ms / TEXTUAL_IMPORT_MS:.2f}x (aim <= 1.5x)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
