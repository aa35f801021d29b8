"""scripts/busy_host.sh: a usage line for bad input, and as root a run that leaves nothing
behind (its CPU loops and churner stopped, its loop devices detached and removed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.loopdev import require_loop_devices

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "busy_host.sh"
USAGE = "usage: scripts/busy_host.sh [SECONDS]   (as root; Ctrl-C or SIGTERM stops it)\n"


def test_help_is_the_usage_line_and_a_bad_argument_is_exit_2() -> None:
    shown = subprocess.run([SCRIPT, "--help"], capture_output=True, text=True, timeout=10)
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, USAGE, "")
    bad = subprocess.run([SCRIPT, "soon"], capture_output=True, text=True, timeout=10)
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", USAGE)


@pytest.mark.root
def test_a_timed_run_churns_and_leaves_nothing_behind() -> None:
    require_loop_devices()
    run = subprocess.run([SCRIPT, "2"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    started = re.search(r"running \(pids ([\d ]+); files in (\S+)\)", run.stdout)
    assert started, run.stdout
    pids, work = [int(p) for p in started.group(1).split()], started.group(2)
    churned = re.search(r"churner did (\d+) cycles", run.stdout)
    assert churned and int(churned.group(1)) > 0, run.stdout
    assert "stopped; load average" in run.stdout
    assert not Path(work).exists()
    for pid in pids:  # gone (a pid reused since runs something else)
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        assert "while :; do :; done" not in cmdline and work not in cmdline, pid
    for entry in Path("/sys/block").glob("loop*"):
        backing = entry / "loop" / "backing_file"
        if backing.exists():
            assert not backing.read_text().startswith(work), entry.name
