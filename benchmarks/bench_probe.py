"""Does the wrapper perturb the measurement? ``iotop-plus probe`` against fio run directly.

The same 4k randread QD32 job (the ``randread`` preset, same fio argv, read-only) runs on a
loop device this script creates on its own sparse file, alternating: iotop-plus, fio,
iotop-plus, fio... ``--rounds`` times each. Prints every run, the median IOPS of each side
and the ratio iotop-plus / fio, which should be within 3% of 1.

Needs root (losetup) and fio. The loop device is detached and its file removed in
``finally``.

    .venv/bin/python benchmarks/bench_probe.py [--rounds 5] [--runtime 5] [--size-mb 256]
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
from unwind import unwind_on_signals

from iotop_plus.probe.fio_argv import build_argv
from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.target import plan_target
from iotop_plus.roots import Roots

STATE = tempfile.mkdtemp(prefix="iotop-plus-bench-state-")
"""A state directory of the benchmark's own: probe results never go to root's /var/lib."""


def attach_loop(directory: Path, size_mb: int) -> str:
    """A loop device on a new sparse file in ``directory``; returns ``/dev/loopN``."""
    backing = directory / "bench-probe.img"
    with open(backing, "xb") as fh:
        fh.truncate(size_mb * 1024 * 1024)
    return subprocess.run(
        ["losetup", "--find", "--show", str(backing)], check=True, capture_output=True, text=True
    ).stdout.strip()


def run_iotop_plus(device: str, runtime: int, size_mb: int) -> tuple[float, list[str], float]:
    """IOPS from ``iotop-plus probe randread``, the fio argv it ran, and the CPU seconds the
    wrapper itself used (not fio's), sampled until it exits."""
    proc = psutil.Popen(
        [sys.executable, "-m", "iotop_plus", "--state-dir", STATE,
         "probe", "randread", "--target", device,
         "--runtime", str(runtime), "--set", f"size={size_mb}", "--format", "json", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    cpu = 0.0
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            cpu = times.user + times.system
        time.sleep(0.1)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"iotop-plus probe failed: {err.strip()}")
    doc = json.loads(out)
    return float(doc["iops"]), list(doc["fio_argv"]), cpu


def run_fio(argv: list[str]) -> float:
    """IOPS of fio run directly with ``argv`` (the last of its JSON documents)."""
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    decoder = json.JSONDecoder()
    pos, last = 0, None
    while (start := out.find("{", pos)) >= 0:
        last, pos = decoder.raw_decode(out, start)
    assert last is not None, "fio printed no JSON"
    return float(last["jobs"][0]["read"]["iops"])


def main() -> int:
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runtime", type=int, default=5, help="seconds per run")
    parser.add_argument("--size-mb", type=int, default=256)
    args = parser.parse_args()
    fio = shutil.which("fio")
    if fio is None or os.geteuid() != 0:
        print("bench_probe: needs root and fio", file=sys.stderr)
        return 1
    preset = PRESETS["randread"]
    params = replace(preset.params, runtime_s=args.runtime, size_mb=args.size_mb)
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp:
        device = attach_loop(Path(tmp), args.size_mb)
        try:
            # The argv iotop-plus will build for this device, to run fio directly.
            target = plan_target(device, preset, params, Roots())
            argv = build_argv(fio, preset, params, target, Path(device))
            print(f"device {device}, {args.runtime} s per run, {args.rounds} rounds")
            print("fio argv: " + " ".join(argv))
            ours: list[float] = []
            theirs: list[float] = []
            wrapper_cpu: list[float] = []
            for i in range(args.rounds):
                # ABBA order, so a load that drifts during the run favours neither side.
                if i % 2 == 0:
                    iops, used, cpu = run_iotop_plus(device, args.runtime, args.size_mb)
                    theirs.append(run_fio(argv))
                else:
                    theirs.append(run_fio(argv))
                    iops, used, cpu = run_iotop_plus(device, args.runtime, args.size_mb)
                wrapper_cpu.append(cpu)
                if used != argv:
                    print(f"warning: iotop-plus ran a different argv: {' '.join(used)}")
                ours.append(iops)
                print(f"round {i + 1}: iotop-plus {ours[-1]:12,.0f} IOPS   fio {theirs[-1]:12,.0f}")
        finally:
            subprocess.run(["losetup", "-d", device], check=False)
    med_ours, med_theirs = statistics.median(ours), statistics.median(theirs)
    ratio = med_ours / med_theirs
    print(f"median IOPS: iotop-plus {med_ours:,.0f}  fio {med_theirs:,.0f}")
    print(f"ratio iotop-plus / fio: {ratio:.4f} ({(ratio - 1) * 100:+.2f}%)")
    spread = (max(theirs) - min(theirs)) / med_theirs
    print(
        f"noise floor: fio alone ranged {min(theirs):,.0f}-{max(theirs):,.0f} "
        f"({spread:.0%} of its median)"
    )
    cpu = statistics.median(wrapper_cpu)
    print(
        f"wrapper CPU (Python, not fio) per run: median {cpu:.2f} s over a {args.runtime} s run "
        "(interpreter start-up included)"
    )
    paired = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    print(f"median of per-round ratios: {paired:.4f}")
    load = os.getloadavg()[0]
    print(f"load average (1 min) at the end: {load:.2f} on {os.cpu_count()} CPUs")
    print("within 3%: " + ("yes" if abs(ratio - 1) <= 0.03 else "NO"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
