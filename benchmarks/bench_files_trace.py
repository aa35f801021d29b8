"""What do the hot-files probes cost? (The files part samples its events when they cost over
0.3 us each, and says at what rate.)

On a loop device backed by a private tmpfs, with ext4 on it and read-ahead 0, fio runs

* ``randread``: 4k random buffered reads (psync, QD1) of a file whose cache fio drops at the
  start of each run (``invalidate=1``), so every read adds a page (one
  ``mm_filemap_add_to_page_cache`` event);
* ``write``: 4k buffered writes (psync) into a new file (a write_begin, a page add and a
  write_end per call);

untraced and traced by the part's probes (:func:`~iotop_plus.sampling.files.trace.file_program`
with the tracer's tick printing and clearing the maps every 250 ms) at each sampling rate
asked for, alternating over several rounds. The cost per event is measured in the kernel
while this process holds a ``BPF_ENABLE_STATS`` descriptor (the sysctl is never touched):
each probe's mean time per run, summed over the probes that ran at least once per two
fio I/Os (other processes' events on a busy host change the mean little, the count a lot).
IOPS lost are the traced runs' median against the untraced runs' median (noisy on a shared
2-core host: printed with the range). Printed, not asserted. Needs root, fio and bpftrace;
the mount, the loop device and the tmpfs are removed in ``finally``.

    .venv/bin/python benchmarks/bench_files_trace.py [--rounds 3] [--runtime 4] [--sample 1 8]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_attribution import enable_bpf_stats, prog_stats  # this directory: run as a script
from bench_latency import tmpfs_loop

from iotop_plus.sampling.files.trace import MAPS, file_program

WORKLOADS = ("randread", "write")


@contextlib.contextmanager
def ext4_on(dev: str) -> Iterator[Path]:
    """ext4 on ``dev`` mounted on a new directory, read-ahead 0; unmounted in ``finally``."""
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    Path(f"/sys/block/{dev}/queue/read_ahead_kb").write_text("0\n")
    mnt = Path(tempfile.mkdtemp(prefix="iotop-plus-bench-files-"))
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        os.rmdir(mnt)


@contextlib.contextmanager
def traced(sample: int) -> Iterator[int]:
    """bpftrace running the probes with a 250 ms tick that prints and clears the maps."""
    tick = "interval:ms:250 {\n" + "".join(f"  print({m}); clear({m});\n" for m in MAPS) + "}\n"
    text = file_program(sample) + tick
    proc = subprocess.Popen(
        ["bpftrace", "-f", "json", "-e", text],
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
            yield proc.pid
        finally:
            proc.terminate()
            proc.wait(10)
            drain.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def fio(workload: str, mnt: Path, runtime: float, n: int) -> dict[str, float]:
    """One fio run; its IOPS and I/Os."""
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
    return {"iops": side["iops"], "ios": side["total_ios"]}


def run(
    workload: str, mnt: Path, runtime: float, sample: int | None, n: int
) -> tuple[float, float | None]:
    """IOPS of one run and the probes' ns per fio I/O (None untraced)."""
    if sample is None:
        return fio(workload, mnt, runtime, n)["iops"], None
    with traced(sample) as pid:
        before = prog_stats(pid)
        got = fio(workload, mnt, runtime, n)
        after = prog_stats(pid)
    ns = 0.0
    for prog, (time_ns, count) in after.items():
        t0, c0 = before.get(prog, (0, 0))
        runs = count - c0
        if runs >= 0.5 * got["ios"]:  # a per-I/O probe (not the tick), its mean time per run
            ns += (time_ns - t0) / runs
    return got["iops"], ns


def main() -> int:
    """Run the rounds and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=4)
    ap.add_argument("--sample", type=int, nargs="+", default=[1, 8])
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_files_trace: needs root (losetup, mount, bpftrace)", file=sys.stderr)
        return 1
    variants: list[int | None] = [None, *args.sample]
    iops: dict[tuple[str, int | None], list[float]] = {}
    cost: dict[tuple[str, int | None], list[float]] = {}
    stats_fd = enable_bpf_stats()
    n = 0
    try:
        with tmpfs_loop(900) as dev, ext4_on(dev) as mnt:
            subprocess.run(
                [
                    "fio",
                    "--name=lay",
                    f"--filename={mnt}/read.dat",
                    "--size=512m",
                    "--rw=write",
                    "--bs=1m",
                    "--end_fsync=1",
                ],
                check=True,
                capture_output=True,
            )
            for r in range(args.rounds):
                for workload in WORKLOADS:
                    order = variants if r % 2 == 0 else list(reversed(variants))
                    for sample in order:
                        n += 1
                        rate, ns = run(workload, mnt, args.runtime, sample, n)
                        iops.setdefault((workload, sample), []).append(rate)
                        if ns is not None:
                            cost.setdefault((workload, sample), []).append(ns)
                print(f"round {r + 1} done at {time.strftime('%H:%M:%S')}", flush=True)
    finally:
        os.close(stats_fd)
    for workload in WORKLOADS:
        base = statistics.median(iops[(workload, None)])
        print(f"{workload}: untraced median {base:.0f} IOPS")
        for sample in args.sample:
            got = iops[(workload, sample)]
            med = statistics.median(got)
            ns = statistics.median(cost[(workload, sample)])
            print(
                f"  sampled 1 in {sample}: {ns:.0f} ns of probes per I/O, "
                f"median {med:.0f} IOPS ({(base - med) / base * 100:+.1f} % lost; runs "
                f"{min(got):.0f}..{max(got):.0f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
