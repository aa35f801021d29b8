"""A probe's observer effect: ``iotop-plus probe randread``
traced against ``--no-trace``, with plain fio (the same argv) as the peer, in one run.

A loop device on a file in a private tmpfs (no backing I/O to trace), the ``randread`` preset
(4k, QD32), ``--rounds`` rounds of the three runs in alternating order (traced, untraced, fio;
then fio, untraced, traced...), so a load that drifts favours none. Printed: every run, the
median IOPS of each side, the ratio traced / untraced (goal >= 0.95) and traced / fio, and the
tracer's cost per request measured in the kernel: while this script holds a
``BPF_ENABLE_STATS`` descriptor (the ``kernel.bpf_stats_enabled`` sysctl is never touched;
closing the descriptor ends it) every BPF program counts its runs and their time, read from
``/proc/PID/fdinfo`` of the probe's bpftrace child while it runs. A request's cost is the sum,
over the programs that ran at least once per request (submission, issue, completion; not the
tick), of their mean time per run. Reported as the median of the rounds with its range (goal
<= 0.3 us), and the load average with it. Printed, not asserted. Needs root, fio, bpftrace.

    .venv/bin/python benchmarks/bench_probe_trace.py [--rounds 9] [--runtime 5] [--size-mb 256]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import psutil
from bench_attribution import enable_bpf_stats, prog_stats  # this directory: run as a script
from bench_latency import tmpfs_loop
from bench_probe import run_fio

from iotop_plus.probe.fio_argv import build_argv
from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.target import plan_target
from iotop_plus.roots import Roots
from iotop_plus.sampling.latency.program import MARKER

STATE = tempfile.mkdtemp(prefix="iotop-plus-bench-state-")
"""A state directory of the benchmark's own: probe results never go to root's /var/lib."""


def _child_tracer(pid: int) -> int | None:
    """The bpftrace child that the probe process ``pid`` started, if it runs yet."""
    mark = f"{MARKER} pid={pid}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as fh:
                if mark in fh.read():
                    return int(entry)
    return None


def _trace_flags(traced: bool) -> list[str]:
    """The probe's flag for a traced or an untraced run (``--trace`` where probes run
    untraced by default)."""
    helptext = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "probe", "--help"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    if "--trace" in helptext.replace("--no-trace", ""):
        return ["--trace"] if traced else []
    return [] if traced else ["--no-trace"]


def run_probe(
    device: str, runtime: int, size_mb: int, flags: list[str]
) -> tuple[float, float | None, int | None, list[str]]:
    """IOPS of one probe, the tracer's ns per request (None untraced), how many requests it
    timed per request run (``sampled``), and the fio argv it ran."""
    proc = psutil.Popen(
        [sys.executable, "-m", "iotop_plus", "--state-dir", STATE,
         "probe", "randread", "--target", device,
         "--runtime", str(runtime), "--set", f"size={size_mb}", "--format", "json", "--quiet",
         *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    child: int | None = None
    stats: dict[str, tuple[int, int]] = {}
    while proc.poll() is None:
        if child is None:
            child = _child_tracer(proc.pid)
        if child is not None:
            with contextlib.suppress(OSError):
                stats = prog_stats(child) or stats
        time.sleep(0.1)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"iotop-plus probe failed: {err.strip()}")
    doc = json.loads(out)
    iops = float(doc["iops"])
    ns: float | None = None
    if stats:
        ios = iops * runtime
        ns = sum(t / c for t, c in stats.values() if c >= 0.5 * ios)
    block = (doc.get("read") or {}).get("block") or {}
    sampled = block.get("sampled")
    return iops, ns, sampled, list(doc["fio_argv"])


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):,.0f} (range {min(values):,.0f}-{max(values):,.0f})"


def main() -> int:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runtime", type=int, default=5, help="seconds per run")
    parser.add_argument("--size-mb", type=int, default=256)
    args = parser.parse_args()
    fio = shutil.which("fio")
    if fio is None or os.geteuid() != 0 or shutil.which("bpftrace") is None:
        print("bench_probe_trace: needs root, fio and bpftrace", file=sys.stderr)
        return 1
    preset = PRESETS["randread"]
    params = replace(preset.params, runtime_s=args.runtime, size_mb=args.size_mb)
    on, off = _trace_flags(True), _trace_flags(False)
    side: dict[str, list[float]] = {"traced": [], "untraced": [], "fio": []}
    per_req: list[float] = []
    loads: list[float] = []
    sampled: set[int | None] = set()
    stats_fd = enable_bpf_stats()
    try:
        with tmpfs_loop(args.size_mb) as name:
            device = f"/dev/{name}"
            target = plan_target(device, preset, params, Roots())
            argv = build_argv(fio, preset, params, target, Path(device))
            print(f"device {device} (tmpfs-backed), {args.runtime} s per run, {args.rounds} rounds")
            order = ("traced", "untraced", "fio")
            for r in range(args.rounds):
                got: dict[str, float] = {}
                for what in order if r % 2 == 0 else tuple(reversed(order)):
                    if what == "fio":
                        got[what] = run_fio(argv)
                        continue
                    iops, ns, n, used = run_probe(
                        device, args.runtime, args.size_mb, on if what == "traced" else off
                    )
                    got[what] = iops
                    if used[-len(argv) + 1 :] != argv[1:] and "--readonly" not in used:
                        print(f"warning: the probe ran another job: {' '.join(used)}")
                    if what == "traced":
                        sampled.add(n)
                        if ns is not None:
                            per_req.append(ns)
                for what, v in got.items():
                    side[what].append(v)
                loads.append(os.getloadavg()[0])
                cost = f", tracer {per_req[-1]:.0f} ns/request" if per_req else ""
                print(
                    f"round {r + 1}: traced {got['traced']:,.0f}  untraced {got['untraced']:,.0f}"
                    f"  fio {got['fio']:,.0f} IOPS{cost}  (load {loads[-1]:.2f})",
                    flush=True,
                )
    finally:
        os.close(stats_fd)
    for what, values in side.items():
        print(f"{what:9} IOPS {_spread(values)}")
    med = {k: statistics.median(v) for k, v in side.items()}
    paired = [t / u for t, u in zip(side["traced"], side["untraced"], strict=True)]
    ratio = med["traced"] / med["untraced"]
    print(
        f"traced / untraced: {ratio:.3f} of medians, per round median "
        f"{statistics.median(paired):.3f} (range {min(paired):.3f}-{max(paired):.3f}) "
        "(goal >= 0.95) "
        f"[{'met' if ratio >= 0.95 else 'MISSED'}]"
    )
    print(f"traced / fio: {med['traced'] / med['fio']:.3f}; untraced / fio: "
          f"{med['untraced'] / med['fio']:.3f}")  # fmt: skip
    if per_req:
        mid = statistics.median(per_req) / 1000
        print(
            f"tracer per request: {mid:.3f} us, median of {len(per_req)} rounds (range "
            f"{min(per_req) / 1000:.3f}-{max(per_req) / 1000:.3f}) (goal <= 0.3) "
            f"[{'met' if mid <= 0.3 else 'MISSED'}]; sampled: {sorted(map(str, sampled))}"
        )
    print(
        f"load average (1 min) {_spread(loads)} on {os.cpu_count()} CPUs; "
        f"fio alone ranged {min(side['fio']):,.0f}-{max(side['fio']):,.0f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
