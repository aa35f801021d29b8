"""The sync and journal parts' observer effect: a WAL-like fio job (8k writes, each followed by
fdatasync) on ext4 traced by their probes against the same job untraced, in one run.

ext4 on a loop device on a file in a private tmpfs (the syncs are as cheap as they get, so the
probes' share of each is the largest it can be), ``--rounds`` rounds of the two runs in
alternating order (traced, untraced; then untraced, traced...), so a load that drifts favours
neither. The traced runs run the parts' programs (``SyncPart.trace``, ``Jbd2Part.trace``)
in one bpftrace with a 250 ms tick that prints and clears their maps, two copies of each
as the tracer keeps them.
Printed: every run's syncs a second, the median of each side and the ratio traced /
untraced (and the median of the rounds' own ratios), and the probes' cost per sync measured
in the kernel: while this script holds a ``BPF_ENABLE_STATS`` descriptor (the sysctl is
never touched) every BPF program counts its runs and their time, read from
``/proc/PID/fdinfo`` of the bpftrace child; the cost is the time of every program but the
tick over the syncs fio made (so it includes the jbd2 probes' share). Printed, not
asserted. Needs root, fio, bpftrace, mkfs.ext4.

    .venv/bin/python benchmarks/bench_sync_trace.py [--rounds 7] [--runtime 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from bench_attribution import enable_bpf_stats, prog_stats  # this directory: run as a script
from bench_latency import tmpfs_loop
from unwind import unwind_on_signals

from iotop_plus.roots import Roots
from iotop_plus.sampling.latency.generations import buffered_text, flush_lines
from iotop_plus.sampling.sync.jbd2_part import Jbd2Part
from iotop_plus.sampling.sync.part import SyncPart

TICK_MS = 250


def program() -> str:
    parts = [p.trace(Roots()) for p in (SyncPart(), Jbd2Part())]
    programs = [p for p in parts if p is not None]
    maps = [m for p in programs for m in p.maps]
    lines = ["// iotop-plus-bench-sync", *(buffered_text(p.text, p.maps) for p in programs)]
    lines.append(f"interval:ms:{TICK_MS} {{")
    lines += flush_lines(maps)
    lines += ['  printf("tick %llu\\n", nsecs);', "}"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def ext4_on(device: str) -> Iterator[Path]:
    mnt = Path(tempfile.mkdtemp(prefix="iotop-plus-bench-sync-"))
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{device}"], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "noatime", f"/dev/{device}", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        os.rmdir(mnt)


def run_fio(target: Path, runtime: int) -> tuple[float, int]:
    """Syncs a second and how many syncs fio made."""
    out = subprocess.run(
        ["fio", "--name=wal", f"--filename={target}", "--rw=write", "--bs=8k", "--size=64m",
         "--fdatasync=1", "--ioengine=psync", "--time_based", f"--runtime={runtime}",
         "--output-format=json"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    lat = json.loads(out)["jobs"][0]["sync"]["lat_ns"]
    return lat["N"] / runtime, int(lat["N"])


class Tracer:
    def __init__(self, text: str) -> None:
        self.proc = subprocess.Popen(
            ["bpftrace", "-f", "json", "-e", text],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.attached = threading.Event()
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()
        if not self.attached.wait(60):
            self.close()
            raise SystemExit("bpftrace did not attach its probes")

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if '"attached_probes"' in line:
                self.attached.set()

    def busy_ns(self) -> int:
        """Run time of every program but the tick (the one that ran fewest times)."""
        stats = list(prog_stats(self.proc.pid).values())
        if not stats:
            return 0
        tick = min(stats, key=lambda s: s[1])
        return sum(t for t, _ in stats) - tick[0]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def main() -> None:
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runtime", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root")
    for tool in ("fio", "bpftrace", "mkfs.ext4"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed")
    text = program()
    stats_fd = enable_bpf_stats()
    traced: list[float] = []
    untraced: list[float] = []
    costs: list[float] = []
    try:
        with tmpfs_loop(256) as device, ext4_on(device) as mnt:
            target = mnt / "wal.dat"
            run_fio(target, 1)  # lay the file out
            for rnd in range(args.rounds):
                order = (True, False) if rnd % 2 == 0 else (False, True)
                for with_tracer in order:
                    if not with_tracer:
                        rate, _ = run_fio(target, args.runtime)
                        untraced.append(rate)
                        print(f"round {rnd + 1} untraced: {rate:9.0f} syncs/s")
                        continue
                    tracer = Tracer(text)
                    try:
                        before = tracer.busy_ns()
                        rate, syncs = run_fio(target, args.runtime)
                        cost = (tracer.busy_ns() - before) / max(syncs, 1)
                    finally:
                        tracer.close()
                    traced.append(rate)
                    costs.append(cost)
                    print(f"round {rnd + 1} traced:   {rate:9.0f} syncs/s, {cost:6.0f} ns a sync")
    finally:
        os.close(stats_fd)
    t, u = statistics.median(traced), statistics.median(untraced)
    print(f"median syncs/s: traced {t:.0f}, untraced {u:.0f}; traced / untraced {t / u:.3f}")
    pairs = sorted(a / b for a, b in zip(traced, untraced, strict=True))
    print(
        f"traced / untraced within a round: median {statistics.median(pairs):.3f} "
        f"(range {pairs[0]:.3f}-{pairs[-1]:.3f})"
    )
    print(
        f"probe cost a sync: median {statistics.median(costs):.0f} ns "
        f"(range {min(costs):.0f}-{max(costs):.0f}); load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
