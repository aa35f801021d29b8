"""What does attributing requests to their issuers cost the tracer? (Aim: at most 0.3 us more
per request than the tracer without it.)

fio randread at QD1 (psync, unthrottled) on a loop device backed by a private tmpfs, traced
by the real consumer (a LiveSource reading a frame every second in a thread, as the TUI's
sampler does) in each of these ways, alternating over several rounds:

* ``plain``: LATENCY (device-time histograms), maps keyed by the number of ``rwbs``;
* ``attributed``: LATENCY + ISSUERS (each request charged to its pid, cgroup and comm; a
  workqueue worker's to its job, and every process's comm kept at its exit);
* ``attributed-no-jobs``: the same without following workers to their jobs (no ``curtask``
  read per request) and without the exit probe, for the cost of those two;
* ``plain-string``: LATENCY with the maps keyed by the ``rwbs`` string instead of its number;
* ``untraced``: no tracer (for scale).

The cost per request is measured in the kernel: while the benchmark holds a
``BPF_ENABLE_STATS`` descriptor (released when it exits; the ``kernel.bpf_stats_enabled``
sysctl is never touched) every BPF program counts its runs and their time, which
``/proc/PID/fdinfo`` of the bpftrace child shows (``run_time_ns``, ``run_cnt``). A request
runs each per-request probe once (submission, issue, completion), so its cost is the sum over
those programs (the ones that ran at least once per fio request; the tick, the frame marker
and the flusher's probe run per frame or per writeback) of their mean time per run, over the
fio run alone. Wall-clock IOPS on this shared 2-core machine swing by tens of percent between
runs, far more than a fraction of a microsecond, so they are printed for scale only. The
extra cost of B over A is taken round by round (the variants alternate) and reported as the
median of the rounds with its range. Printed, not asserted. Needs root, fio and bpftrace; the
tmpfs and the loop device are removed in ``finally``.

    .venv/bin/python benchmarks/bench_attribution.py [--rounds 5] [--runtime 5]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import statistics
import sys
import threading
from unittest import mock

from bench_latency import fio, tmpfs_loop  # this directory: run as a script
from unwind import unwind_on_signals

from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.latency import tracer as latency_tracer
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import MARKER
from iotop_plus.sampling.processes.issuers_part import ISSUERS

VARIANTS = ("untraced", "plain", "attributed", "attributed-no-jobs", "plain-string")


BPF_SYSCALL = {"x86_64": 321, "aarch64": 280}
BPF_ENABLE_STATS = 32
"""``bpf(2)`` command: count run time and runs of every program while the fd is held."""


def enable_bpf_stats() -> int:
    """A descriptor that keeps BPF run-time statistics on until it is closed."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 4)(0, 0, 0, 0)  # enable_stats.type = BPF_STATS_RUN_TIME
    fd = int(libc.syscall(BPF_SYSCALL[os.uname().machine], BPF_ENABLE_STATS, attr, 16))
    if fd < 0:
        raise SystemExit(f"BPF_ENABLE_STATS failed: {os.strerror(ctypes.get_errno())}")
    return fd


def tracer_pid() -> int:
    """The bpftrace child this process started (its program names our pid)."""
    mark = f"{MARKER} pid={os.getpid()}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if mark in fh.read():
                        return int(entry)
            except OSError:
                continue
    raise SystemExit("no tracer child found")


def prog_stats(pid: int) -> dict[str, tuple[int, int]]:
    """``prog_id -> (run_time_ns, run_cnt)`` of the BPF programs ``pid`` holds."""
    out: dict[str, tuple[int, int]] = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
                info = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
        except OSError:
            continue
        if "prog_id" in info and "run_time_ns" in info:
            out[info["prog_id"].strip()] = (
                int(info["run_time_ns"]),
                int(info["run_cnt"]),
            )
    return out


class Traced:
    """A LiveSource wanting ``parts``, read every second in a thread, until closed.

    ``sample``: its tracer times one request in this many, fixed (1: every request; a frame
    tracer left to itself would switch to sampling on a busy device, restarting its child
    in the middle of a run)."""

    def __init__(self, parts: tuple[str, ...], sample: int = 1) -> None:
        self.source = LiveSource()
        for part in parts:
            self.source.want(part, True)
        defaults = {**(LatencyPart.__init__.__kwdefaults__ or {}), "sample": sample}
        with mock.patch.object(LatencyPart.__init__, "__kwdefaults__", defaults):
            started = self.source.wait_latency(20)
        if not started:
            raise SystemExit(f"tracer did not start: {self.source.next_frame().latency}")
        self.source.next_frame()
        self.pid = tracer_pid()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            self.source.next_frame()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.source.close()


def _no_offsets(_events: tuple[str, ...]) -> dict[str, int]:
    return {}  # every map keyed by the rwbs string


def run_variant(name: str, dev: str, runtime: float) -> tuple[float, float | None]:
    """QD1 IOPS of fio under variant ``name``, and the probes' ns per request (None when
    untraced)."""
    keys = (
        mock.patch.object(latency_tracer, "rwbs_offsets", _no_offsets)
        if name == "plain-string"
        else contextlib.nullcontext()
    )
    no_jobs = contextlib.ExitStack()
    if name == "attributed-no-jobs":
        for switch in ("jobs_present", "exits_present"):
            no_jobs.enter_context(mock.patch.object(latency_tracer, switch, lambda: False))
    with keys, no_jobs:
        traced = None
        try:
            if name == "untraced":
                return fio(dev, runtime, None)["iops"], None
            traced = Traced((LATENCY, ISSUERS) if name.startswith("attributed") else (LATENCY,))
            before = prog_stats(traced.pid)
            run = fio(dev, runtime, None)
            after = prog_stats(traced.pid)
        finally:
            if traced is not None:
                traced.close()
    ns = 0.0
    for prog, (time_ns, count) in after.items():
        t0, c0 = before.get(prog, (0, 0))
        runs = count - c0
        if runs >= 0.5 * run["ios"]:  # a per-request probe (not the tick or the marker)
            ns += (time_ns - t0) / runs
    return run["iops"], ns


def per_request_ns(rounds: list[dict[str, float]], a: str, b: str) -> tuple[float, float, float]:
    """Median, min and max over the rounds of B's extra probe time per request over A's."""
    diffs = [r[b] - r[a] for r in rounds]
    return statistics.median(diffs), min(diffs), max(diffs)


def main() -> int:
    """Run the rounds and print the table."""
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=float, default=5)
    ap.add_argument("--size-mb", type=int, default=256)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_attribution: needs root (losetup, mount, bpftrace)", file=sys.stderr)
        return 1
    stats_fd = enable_bpf_stats()
    rounds: list[dict[str, float]] = []  # ns per request, by variant
    iops: dict[str, list[float]] = {name: [] for name in VARIANTS}
    try:
        with tmpfs_loop(args.size_mb) as dev:
            for r in range(args.rounds):
                order = VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))
                got: dict[str, float] = {}
                for name in order:
                    rate, ns = run_variant(name, dev, args.runtime)
                    iops[name].append(rate)
                    if ns is not None:
                        got[name] = ns
                rounds.append(got)
                print(
                    f"round {r + 1}: "
                    + ", ".join(f"{n} {got[n]:.0f} ns/request" for n in VARIANTS if n in got)
                    + " | QD1 "
                    + ", ".join(f"{n} {iops[n][-1]:.0f}" for n in VARIANTS)
                    + " IOPS",
                    flush=True,
                )
    finally:
        os.close(stats_fd)
    for name in VARIANTS:
        line = f"{name:18} QD1 median {statistics.median(iops[name]):8.0f} IOPS"
        if name != "untraced":
            line += f", probes {statistics.median(r[name] for r in rounds):6.0f} ns per request"
        print(line)
    for a, b, what in (
        ("plain", "attributed", "attribution's extra cost (aim <= 0.3 us)"),
        ("attributed-no-jobs", "attributed", "workers' jobs and the exit probe"),
        ("plain", "plain-string", "rwbs string keys instead of number keys"),
    ):
        med, low, high = per_request_ns(rounds, a, b)
        print(
            f"{what}: {med / 1000:+.3f} us per request, median of {len(rounds)} rounds "
            f"(range {low / 1000:+.3f} .. {high / 1000:+.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
