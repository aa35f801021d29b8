"""smartctl runs contained (issue: a forking smartctl, one that prints without end).

A smartctl that forks a child holding its stdout was reported as "gave no answer in 10 s"
and the child ran on after iotop-plus ended; one printing without end drove ``snapshot
--health`` to 1.6 GB. In-process with the program lookup pointed at a fake smartctl, and
through the console script as uid 65534 (whose ``PATH`` finds the fake; root takes programs
only from the system directories).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from iotop_plus.sampling.health.smart import TIMED_OUT, read_health
from tests.support.fake_programs import pids, running, script
from tests.support.nobody import nobody_directory, nobody_env, nobody_python
from tests.support.wait import holds_within

FIXTURE = Path(__file__).parent.parent / "fixtures" / "smartctl" / "sata-ssd-samsung-mz7wd240.json"
MEMORY_LIMIT = 1 << 30
"""Address space the console script may take here: the old one took 1.6 GB of this host."""


def _forking(child: Path) -> str:
    """Prints the drive's JSON and leaves a child holding its stdout for 600 s."""
    return f'sleep 600 &\necho $! >> "{child}"\ncat "{FIXTURE}"\n'


def _disk() -> str:
    for name in sorted(os.listdir("/sys/block")):
        if not name.startswith(("loop", "zram", "ram", "dm-", "md", "sr")):
            return name
    pytest.skip("no disk on this host")


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids of children the fakes started: any still running at the end are killed."""
    started: list[int] = []
    yield started
    for pid in started:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_forking_smartctl_is_read_and_its_child_killed(
    tmp_path: Path, leftovers: list[int]
) -> None:
    child = tmp_path / "child"
    bin_dir = tmp_path / "bin"
    script(bin_dir, _forking(child), name="smartctl")
    with search_path_override([str(bin_dir)]):
        health = read_health(Roots(sys=tmp_path / "sys"), "sdz", "disk", timeout=20.0)
    leftovers.extend(pids(child))
    assert health.source == "smartctl", health.reason
    assert health.reason is None or not health.reason.startswith(TIMED_OUT)
    assert holds_within(lambda: not running(pids(child)[0]), 5.0)


def test_a_smartctl_printing_without_end_is_stopped_with_one_line(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    script(bin_dir, 'exec yes "{"\n', name="smartctl")
    with search_path_override([str(bin_dir)]):
        health = read_health(Roots(sys=tmp_path / "sys"), "sdz", "disk", timeout=30.0)
    assert health.source == "none"
    assert health.reason == "smartctl printed more than 4 MiB; it was stopped and killed"


PEAK_LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Starts the command and writes its peak RSS (KiB). A child's ``ru_maxrss`` starts at its
parent's resident size when it forks, and a test worker may have grown past the bound in an
earlier test, so the command is started from this small launcher."""


def _snapshot_as_nobody(home: Path, disk: str) -> tuple[int, str, str, int]:
    """``snapshot --health`` of ``disk`` as uid 65534 with ``home/bin`` first on PATH: exit
    status, stdout, stderr and peak memory (KiB)."""
    argv = [*nobody_python(), "-m", "iotop_plus", "--state-dir", str(home / "state")]
    argv += ["snapshot", "--health", "-f", "json", "-i", "0.2", disk]
    env = nobody_env(f"{home / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin")
    out, err, peak = home / "out", home / "err", home / "peak-kib"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    with out.open("wb") as stdout, err.open("wb") as stderr:
        code = subprocess.call(
            [sys.executable, "-c", PEAK_LAUNCHER, str(peak), *argv],
            stdout=stdout, stderr=stderr, env=env, cwd="/", preexec_fn=limit,
        )  # fmt: skip
    return code, out.read_text(), err.read_text(), int(peak.read_text())


def _health(stdout: str) -> dict[str, object]:
    (host,) = json.loads(stdout)["sysstat"]["hosts"]
    (entry,) = host["statistics"][0]["disk"]
    return entry["health"]


@pytest.mark.root
def test_snapshot_with_a_forking_smartctl_reads_it_and_leaves_nothing_running(
    leftovers: list[int],
) -> None:
    disk = _disk()
    with nobody_directory() as home:
        child = home / "child"
        script(home / "bin", _forking(child), name="smartctl")
        os.chown(home / "bin", 65534, 65534)
        code, out, err, _ = _snapshot_as_nobody(home, disk)
        leftovers.extend(pids(child))
        assert code == 0, err
        health = _health(out)
        assert health["source"] == "smartctl", health
        assert not str(health["reason"] or "").startswith(TIMED_OUT)
        assert not any(running(p) for p in pids(child))  # gone when the command ended


@pytest.mark.root
def test_snapshot_with_a_smartctl_printing_without_end_stays_small_and_says_so() -> None:
    disk = _disk()
    with nobody_directory() as home:
        script(home / "bin", 'exec yes "{"\n', name="smartctl")
        os.chown(home / "bin", 65534, 65534)
        code, out, err, peak_kib = _snapshot_as_nobody(home, disk)
    assert code == 0, err
    health = _health(out)
    assert health["source"] in ("none", "sysfs")
    # (in what the driver says, on a virtual disk)
    assert "smartctl printed more than 4 MiB; it was stopped and killed" in str(health["reason"])
    assert peak_kib < 256 * 1024, f"peak {peak_kib} KiB"
