"""`top` as a user who may not read other users' /proc/PID/io (#22 item 12): while root's dd
writes to disk, the per-process totals are "unknown" (not 0.00 B/s stated as fact), only the
readable processes are listed, labelled, the host's totals come from diskstats, and the notes
go to stderr."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.nobody import REPO, nobody_env, nobody_python

MIB = 1 << 20


@contextmanager
def dd_writing(directory: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Root's dd rewriting 4 MiB with O_DIRECT, again and again (at most ~40 MB/s: the loop
    rests 0.1 s between passes, so the shared disk keeps some room)."""
    target = directory / "dd.out"
    script = (
        f'while :; do dd if=/dev/zero of="{target}" bs=1M count=4 oflag=direct conv=notrunc '
        "status=none || exit 1; sleep 0.1; done"
    )
    proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    try:
        yield proc
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def written_sectors() -> int:
    """Sectors written by every device (to wait until the dd's writes reach a disk)."""
    total = 0
    for line in Path("/proc/diskstats").read_text().splitlines():
        fields = line.split()
        total += int(fields[9])
    return total


def top_as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*nobody_python(), "-m", "iotop_plus", "top", *argv],
        capture_output=True,
        text=True,
        cwd="/",
        env=nobody_env("/usr/bin:/bin"),
        timeout=60,
        check=False,
    )


@pytest.mark.root
def test_top_as_non_root_says_totals_unknown_and_gives_host_totals_from_diskstats(
    tmp_path: Path,
) -> None:
    nobody_python()  # skips with the reason when uid 65534 cannot run our code
    with dd_writing(tmp_path) as dd:
        before = written_sectors()
        for _ in range(600):  # until the dd's writes show in diskstats
            if written_sectors() - before >= (8 * MIB) // 512:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                dd.wait(timeout=0.05)  # returns at once if dd died
            assert dd.poll() is None, "dd stopped"
        else:
            pytest.fail("dd's writes never reached diskstats")
        as_json = top_as_nobody("-i", "1", "-c", "2", "-f", "json")
        as_table = top_as_nobody("-i", "1", "-c", "1")
        assert dd.poll() is None, "dd stopped while top ran"

    for run in (as_json, as_table):
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr
        # Notes are stderr's: what the figures cannot say is not part of the output.
        assert "note:" not in run.stdout
        notes = [line for line in run.stderr.splitlines() if "not readable" in line]
        assert len(notes) == 1 and notes[0].startswith("iotop-plus: note: "), run.stderr
        assert "Total DISK figures are unknown" in notes[0]

    doc = json.loads(as_json.stdout)
    assert len(doc["statistics"]) == 2
    for stat in doc["statistics"]:
        assert stat["unreadable"] > 0
        assert stat["total_read_bps"] is None and stat["total_write_bps"] is None
        # The host's writes, which no readable process accounts for.
        assert stat["host_write_bps"] >= 1 * MIB, stat
        assert stat["host_devices"]
        assert stat["readable_write_bps"] < stat["host_write_bps"]
        assert all(p["comm"] != "dd" for p in stat["processes"])

    lines = as_table.stdout.splitlines()
    assert re.search(r"Total DISK READ: unknown \| Total DISK WRITE: unknown$", lines[0]), lines
    host = next(line for line in lines if line.startswith("Host DISK READ: "))
    written = re.search(r"Host DISK WRITE: ([\d.]+) ([BKMG])/s", host)
    assert written is not None, host
    scale = {"B": 1, "K": 1 << 10, "M": MIB, "G": 1 << 30}[written.group(2)]
    assert float(written.group(1)) * scale >= 1 * MIB, host
    assert "(diskstats: " in host
    readable = next(line for line in lines if line.startswith("Readable processes "))
    assert re.search(r"\(\d+ unreadable\)$", readable), readable
    assert not any(re.search(r"\sdd$", line) for line in lines)


def test_top_as_root_keeps_its_totals_and_adds_the_hosts() -> None:
    """Root reads every process: the totals are figures, and the host line sits under them."""
    if os.geteuid() != 0:
        pytest.skip("needs root to read every process")
    done = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "top", "-i", "0.3", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    (stat,) = json.loads(done.stdout)["statistics"]
    assert isinstance(stat["total_read_bps"], float) and isinstance(stat["total_write_bps"], float)
    assert stat["total_write_bps"] == stat["readable_write_bps"]
    assert stat["host_write_bps"] is not None and stat["host_devices"]
