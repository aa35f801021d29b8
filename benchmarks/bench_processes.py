"""How long one per-process I/O sample takes with 500 and 5,000 processes.

Spawns sleeping processes (cleaned up in ``finally``), then times, per sample:

* ``ProcessReader.sample()`` in steady state (what the TUI's worker pays every tick),
  with the delay ticks read as when ``kernel.task_delayacct=1`` and without them;
* its first sample (every command line and user read once);
* the peer: ``psutil.process_iter`` doing the same reads (io_counters, cmdline, username
  and the delay ticks via ``cpu_times().iowait``), measured in the same run.

Prints milliseconds per sample and the ratio psutil / iotop-plus. Run as root to see every
process (otherwise most /proc/PID/io files are unreadable and both sides do less).

    .venv/bin/python benchmarks/bench_processes.py [--sizes 500 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import resource
import statistics
import subprocess
import time

import psutil

from iotop_plus.sampling.processes.reader import ProcessReader


def spawn_sleepers(n: int) -> list[subprocess.Popen[bytes]]:
    """Start ``n`` idle processes that die with their parent's cleanup."""
    procs = []
    for _ in range(n):
        procs.append(subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL))
    return procs


def reap(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill and wait for every sleeper (never leave them behind)."""
    for p in procs:
        with contextlib.suppress(OSError):
            p.kill()
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def time_reader(repeat: int, read_ticks: bool) -> tuple[float, float, int]:
    """(first sample ms, median steady sample ms, processes seen)."""
    with ProcessReader(read_ticks=read_ticks) as reader:
        t = time.perf_counter()
        first = reader.sample()
        cold = (time.perf_counter() - t) * 1000
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            reader.sample()
            times.append((time.perf_counter() - t) * 1000)
    return cold, statistics.median(times), len(first.tasks)


def time_panel(repeat: int) -> tuple[float, float]:
    """(ms the worker spends arranging rows, median ms the UI thread spends on a sample)."""
    import asyncio

    from textual.app import App, ComposeResult

    from iotop_plus.roots import Roots
    from iotop_plus.sampling.frame.model import ProcessFrame
    from iotop_plus.sampling.processes.rates import Accumulator, rates_between
    from iotop_plus.tui.process_rows import View, build_rows
    from iotop_plus.tui.widgets.process_panel import ProcessPanel

    with ProcessReader() as reader:
        prev = reader.sample()
        time.sleep(0.2)
        cur = reader.sample()
    rates = rates_between(prev, cur)
    totals = Accumulator().update(cur)
    t = time.perf_counter()
    rows = build_rows(rates, totals, View())
    arrange_ms = (time.perf_counter() - t) * 1000
    message = ProcessPanel.SampleReady(ProcessFrame(cur, rates, totals, {}), rows, View())
    panel = ProcessPanel(Roots())  # no feed: the benchmark posts the samples itself

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield panel

    times: list[float] = []

    async def drive() -> None:
        async with Host().run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            plist = panel.process_list
            for _ in range(repeat):
                t = time.perf_counter()
                panel.on_process_panel_sample_ready(message)
                for y in range(plist.size.height):
                    plist.render_line(y)
                times.append((time.perf_counter() - t) * 1000)

    asyncio.run(drive())
    return arrange_ms, statistics.median(times)


def psutil_pass() -> int:
    """The same reads through psutil; returns how many processes answered."""
    n = 0
    for proc in psutil.process_iter():
        try:
            proc.io_counters()
            proc.cmdline()
            proc.username()
            proc.cpu_times()  # .iowait is delayacct_blkio_ticks of the main thread
            n += 1
        except psutil.Error:
            pass
    return n


def time_psutil(repeat: int) -> float:
    """Median ms per psutil pass (after one warm-up pass that fills its cache)."""
    psutil_pass()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        psutil_pass()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and soft < max(args.sizes) + 1000:
        resource.setrlimit(resource.RLIMIT_NPROC, (hard, hard))
    print(f"euid {os.geteuid()}, {os.cpu_count()} CPUs, psutil {psutil.__version__}")
    print(
        f"{'procs':>6} {'seen':>6} {'first ms':>9} {'steady ms':>10} {'+ticks ms':>10} "
        f"{'psutil ms':>10} {'ratio':>7} {'ratio+t':>7} {'rows ms':>8} {'UI ms':>6}"
    )
    base = sum(1 for n in os.listdir("/proc") if n.isdigit())
    for size in args.sizes:
        procs: list[subprocess.Popen[bytes]] = []
        try:
            procs = spawn_sleepers(max(0, size - base))
            gc.collect()
            cold, steady, seen = time_reader(args.repeat, read_ticks=False)
            _, with_ticks, _ = time_reader(args.repeat, read_ticks=True)
            peer = time_psutil(args.repeat)
            arrange_ms, ui = time_panel(args.repeat)
            print(
                f"{size:>6} {seen:>6} {cold:>9.1f} {steady:>10.1f} {with_ticks:>10.1f} "
                f"{peer:>10.1f} {peer / steady:>6.1f}x {peer / with_ticks:>6.1f}x "
                f"{arrange_ms:>8.1f} {ui:>6.1f}"
            )
        finally:
            reap(procs)
    print(
        "steady: kernel.task_delayacct=0 (the default), idle processes; +ticks: delay "
        "ticks read too, as with delay accounting on; ratio: psutil / steady; ratio+t: psutil / "
        "(+ticks); rows: building "
        "and sorting the panel's rows (in its worker); UI: the panel's handling of one sample "
        "on the UI thread (rows set, visible ones drawn)"
    )


if __name__ == "__main__":
    main()
