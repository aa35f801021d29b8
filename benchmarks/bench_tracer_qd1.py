"""Tracer IOPS lost at QD1, unthrottled, on a tmpfs-backed loop device (goal: at most 3 %),
timing every request against timing a sample.

fio randread 4k QD1 psync, alternating over ``--rounds`` rounds (order reversed every other
round): untraced; traced by the real consumer (a LiveSource wanting LATENCY, a frame every
second in a thread, as the TUI's sampler does) timing every request (``sample=1``); and timing
one request in ``BUSY_SAMPLE`` (what a busy device gets). Printed: each
run, the median IOPS of each, the IOPS lost (median of the per-round ratios, with their
range), and the BPF programs' time per request from the tracer's fdinfo while this script
holds a ``BPF_ENABLE_STATS`` descriptor (see bench_attribution.py), with the load average.
Printed, not asserted. Needs root, fio and bpftrace.

    .venv/bin/python benchmarks/bench_tracer_qd1.py [--rounds 7] [--runtime 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from bench_attribution import Traced, enable_bpf_stats, prog_stats  # this directory
from bench_latency import fio, tmpfs_loop
from unwind import unwind_on_signals

from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.latency.part import BUSY_SAMPLE

VARIANTS = ("untraced", "every", "sampled")


def run(name: str, dev: str, runtime: float) -> tuple[float, float | None]:
    """QD1 IOPS under ``name`` and the BPF ns per request (None untraced)."""
    if name == "untraced":
        return fio(dev, runtime, None)["iops"], None
    sample = 1 if name == "every" else BUSY_SAMPLE
    traced = Traced((LATENCY,), sample)
    try:
        before = prog_stats(traced.pid)
        done = fio(dev, runtime, None)
        after = prog_stats(traced.pid)
    finally:
        traced.close()
    ns = 0.0
    for prog, (time_ns, count) in after.items():
        t0, c0 = before.get(prog, (0, 0))
        if count - c0 >= 0.5 * done["ios"] / sample:  # per-request programs, not the tick
            ns += (time_ns - t0) / done["ios"]  # over all requests: the sample's cost spread
    return done["iops"], ns


def main() -> int:
    """Run the rounds and print the figures."""
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runtime", type=float, default=4)
    ap.add_argument("--size-mb", type=int, default=256)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_tracer_qd1: needs root (losetup, mount, bpftrace)", file=sys.stderr)
        return 1
    iops: dict[str, list[float]] = {v: [] for v in VARIANTS}
    ns: dict[str, list[float]] = {v: [] for v in VARIANTS[1:]}
    loads: list[float] = []
    stats_fd = enable_bpf_stats()
    try:
        with tmpfs_loop(args.size_mb) as dev:
            for r in range(args.rounds):
                for name in VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS)):
                    rate, cost = run(name, dev, args.runtime)
                    iops[name].append(rate)
                    if cost is not None:
                        ns[name].append(cost)
                loads.append(os.getloadavg()[0])
                print(
                    f"round {r + 1}: "
                    + "  ".join(f"{v} {iops[v][-1]:,.0f}" for v in VARIANTS)
                    + " IOPS; BPF "
                    + "  ".join(f"{v} {ns[v][-1]:.0f} ns/request" for v in ns)
                    + f" (load {loads[-1]:.2f})",
                    flush=True,
                )
    finally:
        os.close(stats_fd)
    for name in VARIANTS:
        print(f"{name:9} QD1 median {statistics.median(iops[name]):,.0f} IOPS")
    for name in VARIANTS[1:]:
        lost = [(1 - t / u) * 100 for t, u in zip(iops[name], iops["untraced"], strict=True)]
        mid = statistics.median(lost)
        cost = statistics.median(ns[name])
        print(
            f"{name}: IOPS lost {mid:+.1f} % (median of {len(lost)} paired rounds, range "
            f"{min(lost):+.1f} .. {max(lost):+.1f}) (goal <= 3 %) "
            f"[{'met' if mid <= 3 else 'MISSED'}]; BPF {cost / 1000:.3f} us per request "
            f"(range {min(ns[name]) / 1000:.3f}-{max(ns[name]) / 1000:.3f})"
        )
    print(f"load average (1 min) median {statistics.median(loads):.2f} "
          f"(range {min(loads):.2f}-{max(loads):.2f}) on {os.cpu_count()} CPUs")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
