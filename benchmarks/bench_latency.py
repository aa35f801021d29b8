"""What does the latency tracer cost? fio on a tmpfs-backed loop device, tracing off and on,
alternating over several rounds:

(a) whole-system CPU from /proc/stat at fixed ``--rate_iops`` (default about 10k and about
    50k), on minus off, in % of one core (goal <= 2 % at 10k). BPF time is charged to the
    task doing the I/O, so this counts it, and bpftrace's and our parser's own CPU too; the
    50k rate also says whether fio still reached it with tracing on;
(b) IOPS lost unthrottled at QD1 (goal <= 3 %), and the cost per request in us;
(c) startup: from ``want(LATENCY)`` to the first frame with percentiles (goal <= 2 s).

"On" is the real consumer: a LiveSource that wants LATENCY and reads a frame every second
in a thread, as the TUI's sampler does. Needs root, fio, bpftrace. The tmpfs mount and the
loop device are removed in ``finally``.

    .venv/bin/python benchmarks/bench_latency.py [--rounds 3] [--runtime 5] [--rates 10000,50000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from unwind import unwind_on_signals

from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY


@contextmanager
def tmpfs_loop(size_mb: int) -> Iterator[str]:
    """A loop device on a file in a private tmpfs; yields ``loopN``."""
    mnt = Path(tempfile.mkdtemp(prefix="iotop-plus-bench-lat-"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb + 16}m", "tmpfs", str(mnt)], check=True
    )
    node = ""
    try:
        backing = mnt / "backing.img"
        with open(backing, "xb") as fh:
            fh.truncate(size_mb * 1024 * 1024)
        node = subprocess.run(
            ["losetup", "--find", "--show", str(backing)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        yield node.removeprefix("/dev/")
    finally:
        if node:
            subprocess.run(["losetup", "-d", node], check=False)
        subprocess.run(["umount", str(mnt)], check=False)
        os.rmdir(mnt)


def cpu_busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return total - idle, total


def fio(dev: str, runtime: float, rate: int | None) -> dict[str, float]:
    """One fio run: QD1 psync up to 10k IOPS (and unthrottled), io_uring at QD8 above (QD1
    reaches about 19k IOPS on this loop device, so 50k needs a queue)."""
    argv = [
        "fio",
        "--name=lat",
        f"--filename=/dev/{dev}",
        "--rw=randread",
        "--bs=4k",
        *(
            ("--ioengine=io_uring", "--iodepth=8")
            if rate and rate > 10000
            else ("--ioengine=psync", "--iodepth=1")
        ),
        "--readonly",
        "--time_based",
        f"--runtime={runtime}",
        "--output-format=json",
        "--thread",
    ]
    if rate:
        argv.append(f"--rate_iops={rate}")
    busy0, _total0 = cpu_busy_jiffies()
    t0 = time.monotonic()
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    busy1, _total1 = cpu_busy_jiffies()
    hz = os.sysconf("SC_CLK_TCK")
    job = json.loads(out[out.index("{") :])["jobs"][0]["read"]
    return {"iops": job["iops"], "cores": (busy1 - busy0) / hz / wall, "ios": job["total_ios"]}


class Tracing:
    """A LiveSource that wants latency, read every second in a thread (the TUI's way)."""

    def __init__(self) -> None:
        self.source = LiveSource()
        self.stop = threading.Event()
        self.first_figures_s: float | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self) -> Tracing:
        t0 = time.monotonic()
        self.source.want(LATENCY, True)
        frame = self.source.next_frame()
        while frame.latency is not None and not frame.latency.has_figures:
            if frame.latency.state == "failed":
                raise SystemExit(f"tracer failed: {frame.latency.status}")
            time.sleep(0.05)
            frame = self.source.next_frame()
        self.first_figures_s = time.monotonic() - t0
        self.thread.start()
        return self

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.source.next_frame()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.source.close()


def main() -> int:
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=5)
    ap.add_argument(
        "--rates",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[10000, 50000],
        help="fixed rates (IOPS) for figure (a), comma-separated",
    )
    ap.add_argument("--size-mb", type=int, default=256)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_latency: needs root (losetup, mount, bpftrace)", file=sys.stderr)
        return 1
    rows: dict[str, list[dict[str, float]]] = {"qd1_off": [], "qd1_on": []}
    for rate in args.rates:
        rows[f"{rate}_off"], rows[f"{rate}_on"] = [], []
    startups: list[float] = []
    with tmpfs_loop(args.size_mb) as dev:
        for r in range(args.rounds):
            for on in (False, True):
                tracing = Tracing() if on else None
                if tracing is not None:
                    tracing.__enter__()
                    startups.append(tracing.first_figures_s or 0.0)
                tag = "on" if on else "off"
                try:
                    for rate in args.rates:
                        rated = fio(dev, args.runtime, rate)
                        rows[f"{rate}_{tag}"].append(rated)
                        print(
                            f"round {r + 1} tracing {tag:3}: {rate} IOPS rated -> "
                            f"{rated['iops']:.0f} IOPS, {rated['cores'] * 100:.1f} % of a core "
                            "busy",
                            flush=True,
                        )
                    free = fio(dev, args.runtime, None)
                finally:
                    if tracing is not None:
                        tracing.__exit__()
                rows[f"qd1_{tag}"].append(free)
                print(
                    f"round {r + 1} tracing {tag:3}: QD1 unthrottled {free['iops']:.0f} IOPS",
                    flush=True,
                )
    med = {
        k: {f: statistics.median(x[f] for x in v) for f in ("iops", "cores")}
        for k, v in rows.items()
    }
    for rate in args.rates:
        cpu = (med[f"{rate}_on"]["cores"] - med[f"{rate}_off"]["cores"]) * 100
        reached = med[f"{rate}_on"]["iops"], med[f"{rate}_off"]["iops"]
        spread = [x["cores"] * 100 for x in rows[f"{rate}_off"]]
        noise = max(spread) - min(spread)  # what the off rounds alone disagree by
        verdict = (
            "MISSED"
            if cpu > 2
            else "met"
            if noise < 2
            else f"unresolved: off rounds spread {noise:.1f} %"
        )
        goal = f" (goal <= 2 %) [{verdict}]" if rate <= 10000 else ""
        print(
            f"(a) CPU at {rate} IOPS: tracing on minus off = {cpu:+.2f} % of a core{goal}; "
            f"reached {reached[0]:.0f} IOPS on, {reached[1]:.0f} off; "
            f"{cpu / 100 / rate * 1e6:.2f} us of CPU per request"
        )
    iops_off, iops_on = med["qd1_off"]["iops"], med["qd1_on"]["iops"]
    lost = (iops_off - iops_on) / iops_off * 100
    per_req_us = (1 / iops_on - 1 / iops_off) * 1e6
    print(
        f"(b) QD1 unthrottled: off {iops_off:.0f} IOPS, on {iops_on:.0f} IOPS, lost {lost:.2f} % "
        f"(goal <= 3 %) [{'met' if lost <= 3 else 'MISSED'}]; {per_req_us:.2f} us per request"
    )
    print(
        f"(c) startup to first percentiles: median {statistics.median(startups):.2f} s, "
        f"max {max(startups):.2f} s (goal <= 2 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
