#!/usr/bin/env python3
"""Fuzz version-4 recordings' frame parts for a while: no traceback, hang or memory over the
bound.

    .venv/bin/python scripts/fuzz_recordings.py [--seconds 60] [--seed N] [--out DIR]

A worker process damages a recording whose samples carry every frame part
(tests/support/fuzz_parts.py: mostly inside the parts' JSON, CRCs re-fixed so the damage
passes them) and puts each copy through the reader and ``snapshot --from`` and ``bundle``
in-process. This process watches it: a case that raises (a traceback, a message of more than
one line, output that is not UTF-8 or holds a control character) is a finding; so is a case
that makes no progress for ``--hang`` seconds (the worker is killed and started again past
it), and a worker whose peak resident memory (``VmHWM``) passes ``--max-mib``. Each finding's
file is kept in ``--out``. Prints cases a second and the findings; exits 1 if there were any.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def worker(seed: int, start: int, out: Path) -> None:
    """Run cases ``start``, ``start + 1``... of the seeded sequence until killed."""
    import random
    import tempfile
    import traceback

    sys.path.insert(0, str(REPO))
    os.environ["TZ"] = "UTC"
    from tests.support.fuzz_parts import check_case, mutate_parts
    from tests.support.hostile_parts import write_parts_recording

    work = Path(tempfile.mkdtemp(prefix="iotop-fuzz-"))
    base = work / "base.rec"
    write_parts_recording(base, 90)
    data = base.read_bytes()
    rng = random.Random(seed)
    directory = work / "case"
    directory.mkdir(mode=0o700)
    path = directory / "iotop-plus-000001-20231114-221330.rec"
    case = 0
    while True:
        damaged = mutate_parts(data, rng)  # every case draws, so a restart past one agrees
        if case >= start:
            path.write_bytes(damaged)
            print(f"start {case}", flush=True)
            try:
                check_case(path, work / "state", case)
            except BaseException:
                keep = out / f"finding-{seed}-{case}.rec"
                keep.write_bytes(damaged)
                last = traceback.format_exc().strip().splitlines()[-1][:300]
                print(f"finding {case} {keep}: {last}", flush=True)
        case += 1


def peak_mib(pid: int) -> float:
    """The peak resident memory of ``pid`` (``VmHWM``), in MiB; 0 once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--hang", type=float, default=20.0, help="seconds a case may take")
    p.add_argument("--max-mib", type=float, default=256.0)
    p.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    p.add_argument("--worker", type=int, metavar="START", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker is not None:
        worker(args.seed, args.worker, args.out)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    findings: list[str] = []
    started = time.monotonic()
    deadline = started + args.seconds
    done = 0
    next_case = 0
    worst = 0.0
    while time.monotonic() < deadline:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--seed", str(args.seed), "--out", str(args.out),
             "--worker", str(next_case)],
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        assert proc.stdout is not None
        current, since = None, time.monotonic()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            worst = max(worst, peak_mib(proc.pid))
            if ready:
                line = proc.stdout.readline()
                if not line:  # the worker died
                    findings.append(f"case {current}: the worker died ({proc.wait()})")
                    next_case = (current or 0) + 1
                    break
                if line.startswith("start "):
                    if current is not None:
                        done += 1
                    current, since = int(line.split()[1]), time.monotonic()
                elif line.startswith("finding "):
                    findings.append(line.strip())
            if current is not None and time.monotonic() - since > args.hang:
                findings.append(f"case {current}: no answer in {args.hang:g} s (hang)")
                next_case = current + 1
                break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if worst > args.max_mib:
            findings.append(f"peak memory {worst:.0f} MiB, over {args.max_mib:g} MiB")
            break
    took = time.monotonic() - started
    print(
        f"seed {args.seed}: {done} cases in {took:.0f} s ({done / took:.2f} cases/s), "
        f"peak {worst:.0f} MiB, {len(findings)} findings"
    )
    for finding in findings:
        print(f"  {finding}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
