"""Run the console script in a child and measure it: exit code, stderr, peak resident memory
and wall time, under an address-space limit so a reader without bounds fails with
MemoryError instead of exhausting the machine, and under a timeout so one that hangs fails.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

LAUNCHER = """
import json, os, resource, subprocess, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
t = time.monotonic()
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
took = time.monotonic() - t
with open(sys.argv[1], "w") as fh:
    json.dump({"peak_kib": usage.ru_maxrss, "seconds": took}, fh)
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Starts the command, waits for it with ``wait4`` and writes its peak RSS and wall time.

A child's ``ru_maxrss`` starts at its parent's resident size when it forks, so the command is
started from this small launcher, not from the test process, which may be large."""


def console_script() -> str:
    """The installed ``iotop-plus`` beside this Python (the venv's console script)."""
    return str(Path(sys.executable).parent / "iotop-plus")


@dataclass(frozen=True)
class Measured:
    code: int
    stderr: str
    peak_mib: float
    seconds: float


def run_measured(tmp: Path, *args: str, timeout: float = 120.0) -> Measured:
    """``iotop-plus --state-dir TMP/state ARGS`` through the console script, measured."""
    err_path, facts = tmp / "stderr.txt", tmp / "measured.json"
    facts.unlink(missing_ok=True)
    argv = [console_script(), "--state-dir", str(tmp / "state"), *args]
    with open(err_path, "w") as err, open(os.devnull, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, str(facts), *argv],
            stdout=out, stderr=err, start_new_session=True,
            env={**os.environ, "TZ": "UTC"},
        )  # fmt: skip
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the command it started
            proc.wait()
            raise AssertionError(f"{' '.join(args)}: still running after {timeout:g} s") from None
    got = json.loads(facts.read_text())
    return Measured(code, err_path.read_text(), got["peak_kib"] / 1024, got["seconds"])
