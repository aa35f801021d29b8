"""Soak: run the real TUI and ``top`` for minutes under churn and watch their memory.

For ``--minutes`` (default 10) it runs, at the same time:

- the TUI from the console script, in tmux, at ``-i 0.25``, with all devices shown (``a``)
  and the Processes tab open (``p``), and the same way a ``--baseline`` one beside it;
- ``iotop-plus top --interval 0.25 --format json``, its output going to /dev/null;
- a churner that starts about ``--procs-per-minute`` (1,000) short processes a minute, each a
  ``dd`` that reads a small file and writes another with fsync, in a temp dir of its own;
- ``--loop-cycles`` (50) attach/detach cycles of loop devices on backing files of its own;
- fio on a loop device of its own, rate-limited (``--fio-rate-iops``);
- ``--devices`` (0) more loop devices of its own, attached for the whole run (sparse 16 MiB
  files), so the TUI's history ring holds that many devices (the memory goal is for about 60).

Every 30 s it prints the RSS (VmRSS of /proc/PID/status) of the TUI and of ``top``. At the end
it prints the table, the slope over the last half of the run (least squares, KiB/min) and a
verdict per program: ``flat`` when the slope is below ``--flat-kib-per-min``, else
``growing``. It also prints the slope once the TUI's 15-minute history ring is full
(``--history-minutes``, default 15, after the TUI started), in KB/s (target: < 1 KB/s).

Everything it made is removed on exit, also on Ctrl-C or SIGTERM: the tmux session, ``top``,
fio, the churner's processes, every loop device it attached (only those: each is checked to be
backed by one of its own files before ``losetup -d``) and the temp dir.

Usage (root, tmux, losetup, fio and dd needed)::

    .venv/bin/python benchmarks/soak.py [--minutes 10] [--iotop-plus PATH]

The TUI's memory goal (20 minutes at 0.25 s, about 60 devices, Processes tab open)::

    .venv/bin/python benchmarks/soak.py --minutes 20 --devices 56 --every 10 --no-top

``--iotop-plus`` defaults to this checkout's ``.venv/bin/iotop-plus``; point it at another
install to compare versions, or run one beside it with ``--baseline PATH`` (a second TUI in
its own tmux session, same devices and churn, shown as ``baseline``). A console script for
an older commit::

    git archive COMMIT iotop_plus | tar -x -C /tmp/base
    printf '#!/bin/sh\nPYTHONPATH=/tmp/base exec %s -m iotop_plus "$@"\n' \
        "$PWD/.venv/bin/python" > /tmp/base/iotop-plus && chmod +x /tmp/base/iotop-plus

(run the soak from outside the checkout: ``python -m`` puts the working directory first).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop_nodes import loop_nodes, remove_made

REPO = Path(__file__).resolve().parents[1]
SESSION = f"iotop-plus-soak-{os.getpid()}"


@dataclass
class Series:
    """RSS readings of one program."""

    name: str
    """``tui`` or ``top``."""
    pid: int
    """The program's pid."""
    points: list[tuple[float, int | None]] = field(default_factory=list)
    """(seconds since start, VmRSS in KiB or None once the program is gone)."""


def vm_rss_kib(pid: int) -> int | None:
    """VmRSS of ``pid`` in KiB, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def slope_kib_per_min(points: Sequence[tuple[float, int]]) -> float | None:
    """Least-squares slope of (seconds, KiB) points, in KiB per minute."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return None
    cov = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return cov / var * 60.0


class Loops:
    """Loop devices attached on our own backing files; detach_all() undoes every one."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.attached: dict[str, Path] = {}
        self.bound: set[str] = set()
        """Every device attached in this run, for :func:`loop_nodes.remove_made`."""
        self.before = loop_nodes()
        self._count = 0
        self._lock = threading.Lock()

    def attach(self, size_mb: int, filled: bool = False) -> str:
        """Attach a loop device on a new file; returns e.g. ``/dev/loop7``."""
        with self._lock:
            self._count += 1
            backing = self.directory / f"loop-{self._count}.img"
        with open(backing, "xb") as fh:  # a file of our own, never an existing one
            if filled:
                block = b"\x5a" * (1024 * 1024)
                for _ in range(size_mb):
                    fh.write(block)
                os.fsync(fh.fileno())
            else:
                fh.truncate(size_mb * 1024 * 1024)
        dev = subprocess.run(
            ["losetup", "--find", "--show", str(backing)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        with self._lock:
            self.attached[dev] = backing
            self.bound.add(dev)
        return dev

    def backing_of(self, dev: str) -> str | None:
        """What the kernel says ``dev`` is backed by (None when detached)."""
        name = os.path.basename(dev)
        try:
            return Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
        except OSError:
            return None

    def detach(self, dev: str) -> None:
        """Detach ``dev`` if it is still backed by our file, and remove the file."""
        with self._lock:
            backing = self.attached.pop(dev, None)
        if backing is None:
            return
        if self.backing_of(dev) == str(backing):
            for _ in range(20):  # udev may hold the device open for a moment
                done = subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
                if done.returncode == 0:
                    break
                time.sleep(0.1)
        backing.unlink(missing_ok=True)

    def detach_all(self) -> None:
        """Detach every device still attached (at exit), and remove the nodes made for them."""
        for dev in list(self.attached):
            self.detach(dev)
        remove_made(self.bound, self.before)


class Churner(threading.Thread):
    """Starts short ``dd`` processes at a steady rate until stopped."""

    def __init__(self, directory: Path, per_minute: int) -> None:
        super().__init__(name="churner", daemon=True)
        self.directory = directory
        self.period = 60.0 / per_minute
        self.started_count = 0
        self.failed = 0
        self.stop = threading.Event()
        self._live: list[subprocess.Popen[bytes]] = []
        source = directory / "source.bin"
        source.write_bytes(os.urandom(64 * 1024))
        self.source = source

    def run(self) -> None:
        deadline = time.monotonic()
        while not self.stop.is_set():
            target = self.directory / f"churn-{self.started_count % 64}.bin"
            argv = [
                "dd",
                f"if={self.source}",
                f"of={target}",
                "bs=16k",
                "count=4",
                "conv=fsync",
                "status=none",
            ]
            try:
                self._live.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL))
                self.started_count += 1
            except OSError:
                self.failed += 1
            self._live = [p for p in self._live if p.poll() is None]
            deadline += self.period
            self.stop.wait(max(0.0, deadline - time.monotonic()))

    def kill_all(self) -> None:
        """Stop starting processes and end those still running."""
        self.stop.set()
        for proc in self._live:
            with suppress(OSError):
                proc.kill()
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def tmux(*args: str, check: bool = True) -> str:
    """Run a tmux command on the soak's own socket-less default server."""
    done = subprocess.run(["tmux", *args], capture_output=True, text=True, check=check)
    return done.stdout


def start_tui(
    binary: str,
    state_dir: Path,
    traced: Path | None = None,
    config_home: Path | None = None,
    session: str = SESSION,
) -> int:
    """The TUI in a detached tmux session; returns its pid once it shows a screen.

    ``traced``: run it under tracemalloc (``tui_tracemalloc.py``), snapshots into that dir.
    ``config_home``: its ``XDG_CONFIG_HOME`` (the tmux server keeps its own environment).
    ``session``: the tmux session's name.
    """
    command = f"exec {binary}"
    if config_home is not None:
        command = f"exec env XDG_CONFIG_HOME={config_home} {binary}"
    if traced is not None:
        python = Path(binary).parent / "python"
        script = REPO / "benchmarks" / "tui_tracemalloc.py"
        frames = os.environ.get("TRACEMALLOC_FRAMES", "12")  # the tmux server has its own env
        command = command.replace(binary, f"{python} {script} run {traced}")
        command = command.replace("exec ", f"exec env TRACEMALLOC_FRAMES={frames} ", 1)
    tmux(
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        "160",
        "-y",
        "48",
        f"{command} --state-dir {state_dir} -i 0.25",
    )
    pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
    # Wait for the first device row (the header alone is not the whole app).
    for _ in range(150):
        screen = tmux("capture-pane", "-p", "-t", session, check=False)
        if "Processes" in screen or "Device" in screen:
            break
        time.sleep(0.2)
    time.sleep(2.0)
    tmux("send-keys", "-t", session, "a")
    time.sleep(0.5)
    tmux("send-keys", "-t", session, "p")
    return pid


def start_tuis(
    args: argparse.Namespace, workdir: Path, traced: Path | None, series: list[Series]
) -> None:
    """The TUI (unless ``--no-tui``) and the ``--baseline`` one, each added to ``series``."""
    config_home = own_config(workdir, args.history_minutes)
    if not args.no_tui:
        pid = start_tui(args.iotop_plus, workdir / "state", traced, config_home)
        series.append(Series("tui", pid))
    if args.baseline:
        state = workdir / "state-baseline"
        pid = start_tui(args.baseline, state, None, config_home, f"{SESSION}-b")
        series.append(Series("baseline", pid))


def start_fio(loops: Loops, seconds: float, rate_iops: int) -> subprocess.Popen[bytes]:
    """fio on a fresh loop device of our own (checked by its backing file, then held open)."""
    dev = loops.attach(128, filled=False)
    fd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
    if loops.backing_of(dev) != str(loops.attached[dev]):
        os.close(fd)
        raise RuntimeError(f"{dev} is not backed by the soak's file")
    argv = [
        "fio",
        "--name=soak",
        f"--filename=/proc/self/fd/{fd}",
        "--rw=randrw",
        "--bs=4k",
        "--size=64m",
        "--direct=1",
        "--ioengine=psync",
        "--thread",
        "--time_based",
        f"--runtime={int(seconds) + 60}",
        f"--rate_iops={rate_iops}",
        "--output=/dev/null",
    ]
    try:
        return subprocess.Popen(argv, pass_fds=(fd,), stdin=subprocess.DEVNULL)
    finally:
        os.close(fd)


def loop_cycles(loops: Loops, cycles: int, seconds: float, stop: threading.Event) -> None:
    """Attach and detach a loop device ``cycles`` times, evenly over ``seconds``."""
    period = seconds / max(cycles, 1)
    for _ in range(cycles):
        if stop.wait(period / 2):
            return
        dev = loops.attach(16)
        if stop.wait(period / 2):
            return
        loops.detach(dev)
    return


def own_config(workdir: Path, history_minutes: float | None) -> Path | None:
    """An ``XDG_CONFIG_HOME`` in ``workdir`` whose config sets ``history_minutes`` (None:
    none, the TUI reads the user's)."""
    if history_minutes is None:
        return None
    home = workdir / "config"
    (home / "iotop-plus").mkdir(parents=True)
    (home / "iotop-plus" / "config.toml").write_text(f"history_minutes = {history_minutes}\n")
    return home


def end_pid(pid: int) -> None:
    """SIGTERM ``pid`` if it still runs (after its tmux session was killed), SIGKILL after 5 s."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with suppress(OSError):
            os.kill(pid, signum)
        for _ in range(50):
            if vm_rss_kib(pid) is None:
                return
            time.sleep(0.1)


def end_tuis(series: list[Series]) -> None:
    """:func:`end_pid` for the TUIs (when they run)."""
    for s in series:
        if s.name in ("tui", "baseline"):
            end_pid(s.pid)


def count_devices() -> int:
    """Lines of /proc/diskstats: the devices the TUI sees."""
    with open("/proc/diskstats") as fh:
        return sum(1 for _ in fh)


def ignore_signals() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP (while cleaning up)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def stop_process(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after 5 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def report_ring_full(series: list[Series], ring_full_s: float) -> None:
    """Print each program's RSS at the end and its slope after ``ring_full_s``, in KB/s."""
    for s in series:
        late = [(t, v) for t, v in s.points if v is not None and t >= ring_full_s]
        slope = slope_kib_per_min(late)
        if slope is None:
            print(f"{s.name}: the run ended before the ring was full (t={ring_full_s:.0f} s)")
            continue
        print(
            f"{s.name}: ring full at t={ring_full_s:.0f} s: RSS {late[0][1] / 1024:.1f} MiB then, "
            f"{late[-1][1] / 1024:.1f} MiB at the end; slope after {slope * 1.024 / 60:+.3f} KB/s "
            f"({len(late)} readings)"
        )


def report(series: list[Series], flat_limit: float) -> bool:
    """Print the table, the last-half slopes and verdicts; True when all are flat."""
    print("\nRSS (KiB)")
    print(f"{'t (s)':>7} " + " ".join(f"{s.name:>10}" for s in series))
    times = sorted({t for s in series for t, _ in s.points})
    for t in times:
        cells = []
        for s in series:
            value = next((v for pt, v in s.points if pt == t), None)
            cells.append(f"{value if value is not None else '-':>10}")
        print(f"{t:>7.0f} " + " ".join(cells))
    last = max((t for s in series for t, _ in s.points), default=0.0)
    half = last / 2
    all_flat = True
    for s in series:
        points = [(t, v) for t, v in s.points if v is not None]
        late = [(t, v) for t, v in points if t >= half]
        slope = slope_kib_per_min(late)
        if not points or s.points[-1][1] is None:
            print(f"{s.name}: exited during the run (verdict: failed)")
            all_flat = False
            continue
        warm = late[0][1] if late else points[0][1]
        end = points[-1][1]
        verdict = "flat" if slope is not None and slope < flat_limit else "growing"
        all_flat &= verdict == "flat"
        shown = "n/a" if slope is None else f"{slope:+.1f}"
        print(
            f"{s.name}: RSS {warm} KiB after warm-up (t={late[0][0] if late else 0:.0f} s), "
            f"{end} KiB at the end; slope over the last half {shown} KiB/min: {verdict}"
        )
    return all_flat


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="run time (default 10)")
    parser.add_argument(
        "--iotop-plus",
        default=str(REPO / ".venv" / "bin" / "iotop-plus"),
        help="console script to run (default: this checkout's .venv)",
    )
    parser.add_argument("--every", type=float, default=30.0, help="seconds between readings")
    parser.add_argument("--procs-per-minute", type=int, default=1000)
    parser.add_argument("--loop-cycles", type=int, default=50)
    parser.add_argument("--fio-rate-iops", type=int, default=200)
    parser.add_argument("--flat-kib-per-min", type=float, default=50.0)
    parser.add_argument("--no-tui", action="store_true", help="only top (e.g. a quick check)")
    parser.add_argument("--no-top", action="store_true", help="only the TUI")
    parser.add_argument("--devices", type=int, default=0, help="loop devices held all along")
    parser.add_argument(
        "--history-minutes",
        type=float,
        help="the TUI's history ring in minutes (history_minutes in a config of the soak's "
        "own; default: the TUI's, 15); e.g. 2 to see the memory after the ring is full sooner",
    )
    parser.add_argument(
        "--baseline",
        metavar="PATH",
        help="a second TUI in the same run, from this console script (e.g. an older commit's, "
        "see below), shown as 'baseline': the peer to judge the TUI's RSS by",
    )
    parser.add_argument("--dir", default="/var/tmp", help="where the temp dir goes")
    parser.add_argument(
        "--tracemalloc",
        metavar="DIR",
        help="run the TUI under tracemalloc; SIGUSR1 snapshots into DIR at --snapshot-at",
    )
    parser.add_argument(
        "--snapshot-at",
        default="120,300",
        help="seconds (comma-separated) at which to take the tracemalloc snapshots",
    )
    return parser.parse_args(argv)


def missing(binary: str) -> str | None:
    """What this machine lacks for the soak, or None."""
    if os.geteuid() != 0:
        return "needs root (loop devices)"
    for tool in ("tmux", "losetup", "fio", "dd"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.access(binary, os.X_OK):
        return f"{binary}: not an executable"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    lacking = missing(args.iotop_plus)
    if lacking:
        print(f"soak: {lacking}", file=sys.stderr)
        return 2

    def on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    # A job started with & from a script inherits SIGINT ignored: take it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    seconds = args.minutes * 60
    workdir = Path(tempfile.mkdtemp(prefix="iotop-plus-soak-", dir=args.dir))
    loops = Loops(workdir)
    stop = threading.Event()
    series: list[Series] = []
    top: subprocess.Popen[bytes] | None = None
    fio: subprocess.Popen[bytes] | None = None
    churner: Churner | None = None
    interrupted = False
    with ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, workdir, True)
        cleanup.callback(loops.detach_all)
        cleanup.callback(lambda: stop_process(fio))
        cleanup.callback(lambda: churner.kill_all() if churner else None)
        cleanup.callback(lambda: stop_process(top))
        # The TUI itself too: one under tracemalloc outlived its killed session once (50 % CPU).
        cleanup.callback(end_tuis, series)
        cleanup.callback(lambda: tmux("kill-session", "-t", SESSION, check=False))
        cleanup.callback(lambda: tmux("kill-session", "-t", f"{SESSION}-b", check=False))
        cleanup.callback(stop.set)
        # Runs first: a second Ctrl-C must not cut the cleanup short.
        cleanup.callback(ignore_signals)
        try:
            for _ in range(args.devices):
                loops.attach(16)
            fio = start_fio(loops, seconds, args.fio_rate_iops)
            churner = Churner(workdir, args.procs_per_minute)
            churner.start()
            cycler = threading.Thread(
                target=loop_cycles,
                args=(loops, args.loop_cycles, seconds, stop),
                name="loops",
                daemon=True,
            )
            cycler.start()
            traced = Path(args.tracemalloc) if args.tracemalloc else None
            start_tuis(args, workdir, traced, series)
            if not args.no_top:
                count = str(int(seconds / 0.25) + 400)
                top = subprocess.Popen(
                    [
                        args.iotop_plus,
                        "--state-dir",
                        str(workdir / "state"),
                        "top",
                        "-i",
                        "0.25",
                        "-c",
                        count,
                        "--format",
                        "json",
                    ],
                    stdout=subprocess.DEVNULL,
                    stdin=subprocess.DEVNULL,
                )
                series.append(Series("top", top.pid))
            started = time.monotonic()
            print(f"soak: {args.minutes:g} min, {args.iotop_plus}, workdir {workdir}")
            print(f"devices in /proc/diskstats: {count_devices()}, load {os.getloadavg()}")
            print(f"{'t (s)':>7} " + " ".join(f"{s.name:>10}" for s in series) + "  churned")
            next_at = 0.0
            snaps = sorted(float(x) for x in args.snapshot_at.split(",")) if traced else []
            while True:
                now = time.monotonic() - started
                if snaps and now >= snaps[0] and series and series[0].name == "tui":
                    snaps.pop(0)
                    with suppress(OSError):
                        os.kill(series[0].pid, signal.SIGUSR1)
                if now >= next_at:
                    for s in series:
                        s.points.append((round(next_at), vm_rss_kib(s.pid)))
                    cells = " ".join(f"{s.points[-1][1]!s:>10}" for s in series)
                    print(f"{next_at:>7.0f} {cells}  {churner.started_count}", flush=True)
                    next_at += args.every
                if now >= seconds:
                    if fio.poll() is not None:
                        print(f"fio: exited early with {fio.returncode}")
                    break
                time.sleep(min(1.0, max(0.0, next_at - now)))
        except KeyboardInterrupt:
            interrupted = True
            print("\nsoak: interrupted; cleaning up", file=sys.stderr)
    if churner is not None:
        print(f"churner: {churner.started_count} processes started, {churner.failed} failed")
    ok = report(series, args.flat_kib_per_min) if series else False
    print(f"devices in /proc/diskstats at the end: {count_devices()}, load {os.getloadavg()}")
    ring_minutes = 15.0 if args.history_minutes is None else args.history_minutes
    report_ring_full(series, ring_minutes * 60)
    left = [d for d in loops.attached]
    if left:
        print(f"soak: could not detach {left}", file=sys.stderr)
    return 130 if interrupted else (0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
