"""CPU of the blocked-tasks part (``iotop_plus.sampling.blocked.scan``) at 1 s frames, with a
same-run control.

    sudo .venv/bin/python benchmarks/bench_blocked.py [--processes 300] [--threads 1000]
        [--seconds 60]

Brings the host up to ``--processes`` processes and ``--threads`` threads (``sleep`` children
and a few Python children with idle threads, all killed at the end), then runs two children
side by side for ``--seconds``, each a frame loop at 1 s reading the disks: one also reads the
blocked part, the other (the control) does not. Each child's CPU time (user + system) over the
run, after a first frame (which opens the files the reader keeps); the difference is the
part's cost, printed as a share of one core. Then, in this process on a stepped clock (frames
back to back, 1 s apart on the frames' clock), the CPU of a frame with a full scan and of one
without, each a median. As root the blocked threads' syscall and stack are read too; run it
also as uid 65534 (``setpriv``, with the system python and ``PYTHONPATH``). Never asserts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from iotop_plus.roots import Roots  # noqa: E402
from iotop_plus.sampling.blocked.scan import FULL_SCAN_S, BlockedReader  # noqa: E402
from iotop_plus.sampling.disks.sampler import Sampler  # noqa: E402
from iotop_plus.sampling.frame.part import ReadContext  # noqa: E402
from iotop_plus.sampling.topology.inventory import read_inventory  # noqa: E402

_THREADER = (
    "import sys, threading\n"
    "stop = threading.Event()\n"
    "for _ in range(int(sys.argv[1])):\n"
    "    threading.Thread(target=stop.wait, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)

_LOOP = """
import os, sys, time, resource
sys.path.insert(0, {repo!r})
from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.inventory import read_inventory
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.blocked.scan import BlockedReader
roots = Roots()
sampler = Sampler(roots)
inventory = read_inventory(roots)
reader = BlockedReader(roots) if sys.argv[1] == "part" else None
def frame():
    sample = sampler.sample()
    if reader is not None:
        reader.read(ReadContext(roots, sample, None, inventory, frozenset({{"blocked"}})))
frame()  # the first frame opens the files the reader keeps: not a per-second cost
next_at = time.monotonic() + 1.0
end = next_at + float(sys.argv[2])
time.sleep(max(0.0, next_at - time.monotonic()))
start = resource.getrusage(resource.RUSAGE_SELF)
while next_at < end:
    frame()
    next_at += 1.0
    time.sleep(max(0.0, next_at - time.monotonic()))
done = resource.getrusage(resource.RUSAGE_SELF)
cpu = (done.ru_utime - start.ru_utime) + (done.ru_stime - start.ru_stime)
print(cpu)
"""


def _counts() -> tuple[int, int]:
    processes = threads = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                threads += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
            processes += 1
    return processes, threads


def _threader(threads: int) -> subprocess.Popen[bytes]:
    """A child with ``threads`` threads (its own and idle ones), once they are all up."""
    kid = subprocess.Popen(
        [sys.executable, "-c", _THREADER, str(threads - 1)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert kid.stdout is not None
    kid.stdout.readline()
    return kid


def _populate(processes: int, threads: int) -> list[subprocess.Popen[bytes]]:
    """Children until the host has at least that many processes and threads."""
    have_p, _ = _counts()
    kids = [subprocess.Popen(["sleep", "3600"]) for _ in range(max(0, processes - have_p - 10))]
    while True:
        have_p, have_t = _counts()
        missing = threads - have_t
        if missing <= 0:
            break
        kids.append(_threader(min(100, missing)))
    kids += [subprocess.Popen(["sleep", "3600"]) for _ in range(max(0, processes - have_p))]
    return kids


def _stepped(frames: int) -> tuple[list[float], list[float], int]:
    """CPU of scan frames and of the others on a stepped clock; threads scanned."""
    roots = Roots()
    sampler = Sampler(roots)
    inventory = read_inventory(roots)
    reader = BlockedReader(roots)
    scans: list[float] = []
    others: list[float] = []
    base = sampler.sample()
    threads = 0
    try:
        for i in range(frames):
            sample = dataclasses.replace(base, monotonic=base.monotonic + i)
            ctx = ReadContext(roots, sample, None, inventory, frozenset({"blocked"}))
            started = time.thread_time()
            value, _ = reader.read(ctx)
            spent = time.thread_time() - started
            (scans if value.scan_age_s == 0 else others).append(spent)
            threads = value.threads
    finally:
        reader.close()
    return scans, others, threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()
    kids = _populate(args.processes, args.threads)
    try:
        processes, threads = _counts()
        loop = _LOOP.format(repo=str(REPO))
        runs = {
            mode: subprocess.Popen(
                [sys.executable, "-c", loop, mode, str(args.seconds)], stdout=subprocess.PIPE
            )
            for mode in ("part", "control")
        }
        cpu = {mode: float(run.communicate()[0]) for mode, run in runs.items()}
        scans, others, scanned = _stepped(args.frames)
    finally:
        for kid in kids:
            kid.kill()
            kid.wait()
    share = (cpu["part"] - cpu["control"]) / args.seconds * 100
    who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(f"host: {processes} processes, {threads} threads; as {who}; fd limit {soft}")
    print(
        f"{args.seconds:.0f} s at 1 s frames: part {cpu['part'] * 1000:.0f} ms CPU, control "
        f"{cpu['control'] * 1000:.0f} ms: the part costs {share:.3f} % of a core"
    )
    print(
        f"stepped clock, {args.frames} frames (a full scan every {FULL_SCAN_S:g} s, "
        f"{scanned} threads): scan frame median {statistics.median(scans) * 1000:.2f} ms, "
        f"other frames median {statistics.median(others) * 1000:.3f} ms; "
        f"{(sum(scans) + sum(others)) / args.frames * 100:.3f} % of a core"
    )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
