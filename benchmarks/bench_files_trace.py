"""What do the hot-files probes cost, and how many IOPS do they take? (The files part samples
its events when they cost over 0.3 us each, and says at what rate; the IOPS lost against
untraced are at most 3 % or sampled.)

On a loop device backed by a private tmpfs, with ext4 or XFS on it and read-ahead 0, fio runs

* ``randread``: 4k random buffered reads (psync, QD1) of a file whose cache fio drops at the
  start of each run (``invalidate=1``), so every read adds a page (one
  ``mm_filemap_add_to_page_cache`` event);
* ``write``: 4k buffered writes (psync) into a new file (ext4: a write_begin, a page add and
  a write_end per call; XFS: an ``xfs_file_buffered_write``, a page add and two
  ``iomap_iter``), which the flusher writes back meanwhile;

untraced and traced (once bpftrace's own work after attaching has settled) by the part's
probes as the tracer runs them
(:func:`~iotop_plus.sampling.latency.generations.buffered_text` of
:func:`~iotop_plus.sampling.files.trace.parser`, a 250 ms tick flipping the generation and
printing and clearing the maps) at each sampling rate asked for, alternating over several
rounds (the order reversed every other round). The IOPS are taken with BPF's run-time
statistics off (unless another process holds them on: they read the clock twice per probe
run, as dear as a cheap probe); each traced run is followed by a second one that measures the
cost in the kernel while this process holds a ``BPF_ENABLE_STATS`` descriptor (the sysctl is
never touched): each probe's mean time per run, named by its program (the bpftrace child's
descriptors are read with ``pidfd_getfd``); "per I/O" sums each of the workload's own probes'
(:data:`OWN`) mean time times its runs per fio I/O (other processes' events on a busy host
change a mean little, a count a lot, and other probes that ran are listed apart), and says
what share of an untraced I/O's time that is: the IOPS the probes' own time takes. IOPS lost
as measured are the traced runs' median against the untraced runs' median (noisy on a shared
2-core host: printed with the range), and fio's own CPU time per I/O (user + system) beside
them. ``--sample 0`` adds a control: the same tracepoints attached with empty programs, whose
IOPS lost are what attaching costs before any probe runs (the tracepoint's dispatch into BPF,
which BPF's run-time statistics do not count). The load average is printed at the start and
the end. Printed, not asserted. Needs
root, fio and bpftrace (and mkfs.xfs for XFS); the mount, the loop device and the tmpfs are
removed in ``finally``.

    .venv/bin/python benchmarks/bench_files_trace.py [--rounds 9] [--runtime 2] [--sample 0 1 8]
        [--fs ext4 xfs]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_attribution import BPF_SYSCALL, enable_bpf_stats  # this directory: run as a script
from bench_latency import tmpfs_loop
from unwind import unwind_on_signals

from iotop_plus.sampling.files.trace import parser
from iotop_plus.sampling.latency.generations import buffered_text, flush_lines

WORKLOADS = ("randread", "write")
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"]}
PIDFD_OPEN, PIDFD_GETFD = 434, 438
"""Syscall numbers (the same on every architecture since Linux 5.6)."""
BPF_OBJ_GET_INFO_BY_FD = 15
PROG_NAME_AT = 64
"""Offset of ``name[16]`` in ``struct bpf_prog_info``."""
PER_IO_MIN = 1 / 50
"""A probe is listed when it ran at least this often per fio I/O."""
OWN = {
    ("ext4", "randread"): ("mm_filemap_add_",),
    ("ext4", "write"): ("ext4_da_write_b", "ext4_da_write_e", "mm_filemap_add_", "ext4_writepages"),
    ("xfs", "randread"): ("mm_filemap_add_", "iomap_iter"),
    ("xfs", "write"): ("xfs_file_buffer", "mm_filemap_add_", "iomap_iter", "iomap_add_to_io"),
}
"""The probes (program names, cut at 15 characters) each workload's I/O runs: "per I/O" sums
these; any other probe that ran is other processes' I/O on a shared host, listed apart."""

Key = tuple[str, str, int | None]
"""(filesystem, workload, sampling rate; None untraced)."""


@contextlib.contextmanager
def filesystem_on(dev: str, fs: str) -> Iterator[Path]:
    """``fs`` on ``dev`` mounted on a new directory, read-ahead 0; unmounted in ``finally``."""
    subprocess.run([*MKFS[fs], f"/dev/{dev}"], check=True, capture_output=True)
    Path(f"/sys/block/{dev}/queue/read_ahead_kb").write_text("0\n")
    mnt = Path(tempfile.mkdtemp(prefix="iotop-plus-bench-files-"))
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        os.rmdir(mnt)


def program_text(sample: int) -> str:
    """The part's probes as the tracer runs them, with a 250 ms tick; for ``sample`` 0, its
    tracepoints with empty programs."""
    if sample == 0:
        points = sorted(set(re.findall(r"tracepoint:\w+:\w+", parser(1).text)))
        return f"{', '.join(points)} {{ }}\n"
    program = parser(sample)
    flush = "\n".join(flush_lines(program.maps))
    return f"{buffered_text(program.text, program.maps)}\ninterval:ms:250 {{\n{flush}\n}}\n"


@contextlib.contextmanager
def traced(sample: int) -> Iterator[int]:
    """bpftrace running the probes (see :func:`program_text`); yields its pid."""
    proc = subprocess.Popen(
        ["bpftrace", "-f", "json", "-e", program_text(sample)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # wait until attached
            if '"attached_probes"' in line:
                break
        else:
            raise SystemExit("bpftrace did not start")
        drain = subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
        try:
            settle(proc.pid)
            yield proc.pid
        finally:
            proc.terminate()
            proc.wait(10)
            drain.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def cpu_ticks(pid: int) -> int:
    """User and system clock ticks ``pid`` has used."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def settle(pid: int, limit_s: float = 15.0) -> None:
    """Wait (up to ``limit_s``) until bpftrace has done its work after attaching: under 5 % of
    a CPU over half a second, so a run measures its probes, not its start."""
    hz = os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + limit_s
    was = cpu_ticks(pid)
    while time.monotonic() < end:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if (now - was) / hz < 0.025:
            return
        was = now


def prog_stats(pid: int) -> dict[str, tuple[int, int]]:
    """``name#id -> (run_time_ns, run_cnt)`` of the BPF programs ``pid`` holds, each named by
    its program (a probe's tracepoint, cut at 15 characters)."""
    libc = ctypes.CDLL(None, use_errno=True)
    bpf = BPF_SYSCALL[os.uname().machine]
    out: dict[str, tuple[int, int]] = {}
    pidfd = int(libc.syscall(PIDFD_OPEN, pid, 0))
    if pidfd < 0:
        raise SystemExit(f"pidfd_open: {os.strerror(ctypes.get_errno())}")
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as fh:
                    text = fh.read()
            except OSError:
                continue
            info = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
            if "prog_id" not in info or "run_time_ns" not in info:
                continue
            name = "?"
            mine = int(libc.syscall(PIDFD_GETFD, pidfd, int(fd), 0))
            if mine >= 0:
                buf = ctypes.create_string_buffer(256)
                attr = ctypes.create_string_buffer(
                    struct.pack("IIQ", mine, 256, ctypes.addressof(buf)), 16
                )
                if libc.syscall(bpf, BPF_OBJ_GET_INFO_BY_FD, attr, 16) == 0:
                    raw = buf.raw[PROG_NAME_AT : PROG_NAME_AT + 16]
                    name = raw.split(b"\0")[0].decode(errors="replace")
                os.close(mine)
            key = f"{name}#{info['prog_id'].strip()}"
            out[key] = (int(info["run_time_ns"]), int(info["run_cnt"]))
    finally:
        os.close(pidfd)
    return out


def fio(workload: str, mnt: Path, runtime: float, n: int) -> dict[str, float]:
    """One fio run; its IOPS, I/Os and CPU time per I/O (ns, fio's user + system)."""
    common = ["--bs=4k", "--ioengine=psync", "--time_based", f"--runtime={runtime}"]
    if workload == "randread":
        argv = [
            "--name=rr",
            f"--filename={mnt}/read.dat",
            "--rw=randread",
            "--size=512m",
            "--invalidate=1",
        ]
    else:
        name = mnt / f"write-{n}.dat"
        argv = ["--name=w", f"--filename={name}", "--rw=write", "--size=256m"]
    out = subprocess.run(
        ["fio", *argv, *common, "--output-format=json"], check=True, capture_output=True, text=True
    ).stdout
    job = json.loads(out[out.index("{") :])["jobs"][0]
    side = job["read"] if workload == "randread" else job["write"]
    if workload == "write":
        os.unlink(mnt / f"write-{n}.dat")
    ios = max(side["total_ios"], 1)
    cpu_ns = (job["usr_cpu"] + job["sys_cpu"]) / 100 * job["job_runtime"] * 1e6
    return {"iops": side["iops"], "ios": ios, "cpu_per_io": cpu_ns / ios}


def run(
    workload: str, mnt: Path, runtime: float, sample: int | None, n: int, cost: bool = False
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """One run's fio figures and, when it measures the ``cost`` (BPF run-time statistics on
    for the run), each probe's (ns per run, runs per fio I/O)."""
    if sample is None:
        return fio(workload, mnt, runtime, n), {}
    if not cost:
        with traced(sample):
            return fio(workload, mnt, runtime, n), {}
    stats_fd = enable_bpf_stats()
    try:
        with traced(sample) as pid:
            before = prog_stats(pid)
            got = fio(workload, mnt, runtime, n)
            after = prog_stats(pid)
    finally:
        os.close(stats_fd)
    probes: dict[str, tuple[float, float]] = {}
    for prog, (time_ns, count) in after.items():
        t0, c0 = before.get(prog, (0, 0))
        runs = count - c0
        if runs > 0:
            name = prog.split("#")[0]
            was_ns, was_runs = probes.get(name, (0.0, 0.0))  # one probe, several tracepoints
            total = was_ns * was_runs * got["ios"] + (time_ns - t0)
            per_io = was_runs + runs / got["ios"]
            probes[name] = (total / (per_io * got["ios"]), per_io)
    return got, probes


def measure(
    fs: str, args: argparse.Namespace
) -> tuple[dict[Key, list[dict[str, float]]], dict[Key, dict[str, list[tuple[float, float]]]]]:
    """The rounds on one filesystem: fio's figures and the probes' per run."""
    variants: list[int | None] = [None, *args.sample]
    figures: dict[Key, list[dict[str, float]]] = {}
    probes: dict[Key, dict[str, list[tuple[float, float]]]] = {}
    n = 0
    with tmpfs_loop(900) as dev, filesystem_on(dev, fs) as mnt:
        subprocess.run(
            ["fio", "--name=lay", f"--filename={mnt}/read.dat", "--size=512m", "--rw=write",
             "--bs=1m", "--end_fsync=1"],
            check=True,
            capture_output=True,
        )  # fmt: skip
        for r in range(args.rounds):
            for workload in WORKLOADS:
                order = variants if r % 2 == 0 else list(reversed(variants))
                for sample in order:
                    n += 1
                    got, _none = run(workload, mnt, args.runtime, sample, n)
                    figures.setdefault((fs, workload, sample), []).append(got)
                    if sample is None:
                        continue
                    n += 1
                    _got, seen = run(workload, mnt, args.runtime, sample, n, cost=True)
                    for name, pair in seen.items():
                        probes.setdefault((fs, workload, sample), {}).setdefault(name, []).append(
                            pair
                        )
            print(f"{fs} round {r + 1} done at {time.strftime('%H:%M:%S')}", flush=True)
    return figures, probes


def load() -> str:
    """The host's load averages (1, 5, 15 minutes)."""
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def main() -> int:
    """Run the rounds and print the table."""
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runtime", type=float, default=2)
    ap.add_argument("--sample", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--fs", nargs="+", default=["ext4", "xfs"], choices=sorted(MKFS))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_files_trace: needs root (losetup, mount, bpftrace)", file=sys.stderr)
        return 1
    print(f"load average at start: {load()}", flush=True)
    figures: dict[Key, list[dict[str, float]]] = {}
    probes: dict[Key, dict[str, list[tuple[float, float]]]] = {}
    for fs in args.fs:
        got, seen = measure(fs, args)
        figures.update(got)
        probes.update(seen)
    print(f"load average at end: {load()}")
    for fs in args.fs:
        for workload in WORKLOADS:
            base = figures[(fs, workload, None)]
            iops0 = statistics.median(f["iops"] for f in base)
            cpu0 = statistics.median(f["cpu_per_io"] for f in base)
            print(f"{fs} {workload}: untraced median {iops0:.0f} IOPS, fio CPU {cpu0:.0f} ns/I/O")
            for sample in args.sample:
                runs = figures[(fs, workload, sample)]
                iops = [f["iops"] for f in runs]
                med = statistics.median(iops)
                cpu = statistics.median(f["cpu_per_io"] for f in runs)
                seen = probes.get((fs, workload, sample), {})
                per_io = 0.0
                own, others = [], []
                for name, pairs in sorted(seen.items()):
                    ns = statistics.median(p[0] for p in pairs)
                    rate = statistics.median(p[1] for p in pairs)
                    if name in OWN[(fs, workload)]:
                        per_io += ns * rate
                        own.append(f"{name} {ns:.0f} ns x {rate:.2f}")
                    elif rate >= PER_IO_MIN:
                        others.append(f"{name} {ns:.0f} ns x {rate:.2f}")
                if sample == 0:
                    print(
                        f"  empty programs on the same tracepoints: measured median {med:.0f} "
                        f"IOPS ({(iops0 - med) / iops0 * 100:+.1f} % lost; runs "
                        f"{min(iops):.0f}..{max(iops):.0f}), fio CPU {cpu:.0f} ns/I/O "
                        f"({(cpu - cpu0) / cpu0 * 100:+.1f} %)"
                    )
                    continue
                print(
                    f"  sampled 1 in {sample}: {per_io:.0f} ns of probes per I/O "
                    f"({'; '.join(own)}), {per_io * iops0 / 1e7:.1f} % of an untraced I/O's "
                    f"time; measured median {med:.0f} IOPS ({(iops0 - med) / iops0 * 100:+.1f} "
                    f"% lost; runs {min(iops):.0f}..{max(iops):.0f}), fio CPU {cpu:.0f} ns/I/O "
                    f"({(cpu - cpu0) / cpu0 * 100:+.1f} %)"
                )
                if others:
                    print(f"    other processes' events: {'; '.join(others)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
