"""iotop-plus agrees with sysstat's ``iostat -x``, on loop devices this test creates.

Part 1 is exact. ``iostat -f ALTDIR`` reads ``ALTDIR/block/DEV/stat`` and takes its
interval from ``/proc/uptime``. Inside a private mount namespace a file of ours is
bind-mounted over ``/proc/uptime``, so we choose both snapshots (A, B) and the interval.
iostat's second report is then exactly A->B, and every column must equal
``compute_rates(A, B, interval)`` to the printed 2 decimals. A and B are real snapshots of a
loop device under a steady fio load, plus synthetic pairs for the corner cases (32-bit ms
wrap, every counter nonzero, io_ticks beyond the interval).

Part 2 is live: ``iotop-plus snapshot`` and ``iostat`` run side by side under the same
rate-limited load; rates agree within what timing explains, per-I/O sizes exactly.

Only loop devices created here are touched: reads with ``fio --readonly`` on one, writes,
fsyncs and trims on a second one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.commands.snapshot_output import IOSTAT_COLUMNS
from iotop_plus.sampling.disks.diskstats import parse_sys_stat
from iotop_plus.sampling.disks.rates import DeviceRates, compute_rates
from tests.support.loopdev import loop_device

pytestmark = [pytest.mark.slow, pytest.mark.root]

#: Columns that depend only on the I/O mix, not on the interval's exact length.
PER_IO_COLUMNS = ("rareq-sz", "wareq-sz", "rrqm", "wrqm")
#: Load rates (I/Os per second) of the fio jobs.
READ_IOPS, WRITE_IOPS, TRIM_IOPS = 400, 200, 20


def _require_tools() -> None:
    for tool in ("iostat", "fio", "unshare", "mount"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (make test installs fio and sysstat as root)")
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices and a private mount namespace")


@dataclass(frozen=True)
class Loaded:
    """Two loop devices under a steady fio load."""

    reader: str
    """Loop device with a rate-limited 4k random read load (fio --readonly)."""
    writer: str
    """Loop device with 4k random writes and 64k trims."""


def _fio(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        # --thread: one process, so kill() ends every job (forked job processes outlived
        # the test and kept its loop devices attached for up to 120 s).
        ["fio", "--thread", "--time_based", "--runtime=120", "--output-format=terse", *argv],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """Create two loop devices and keep a steady fio load on them for the whole module."""
    _require_tools()
    base = tmp_path_factory.mktemp("parity")
    with (
        loop_device(base, 64, "reader.img") as reader,
        loop_device(base, 64, "writer.img") as writer,
    ):
        procs = [
            _fio(
                [
                    "--name=reads",
                    f"--filename=/dev/{reader}",
                    "--readonly",
                    "--rw=randread",
                    "--bs=4k",
                    "--direct=1",
                    "--ioengine=libaio",
                    "--iodepth=4",
                    f"--rate_iops={READ_IOPS}",
                ],
                base / "fio-reads.log",
            ),
            _fio(
                [
                    f"--filename=/dev/{writer}",
                    "--direct=1",
                    "--ioengine=libaio",
                    "--name=writes",
                    "--rw=randwrite",
                    "--bs=4k",
                    "--iodepth=2",
                    f"--rate_iops={WRITE_IOPS}",
                    "--name=trims",
                    "--rw=randtrim",
                    "--bs=64k",
                    "--iodepth=1",
                    f"--rate_iops={TRIM_IOPS}",
                ],
                base / "fio-writes.log",
            ),
        ]
        try:
            time.sleep(1.5)  # let the rate limiter settle
            for p in procs:
                if p.poll() is not None:
                    log = (base / "fio-reads.log").read_text() + (
                        base / "fio-writes.log"
                    ).read_text()
                    pytest.fail(f"fio exited early ({p.returncode}): {log[-500:]}")
            yield Loaded(reader, writer)
        finally:
            for p in procs:
                p.kill()
                p.wait()


def _stat_text(name: str) -> str:
    return Path(f"/sys/block/{name}/stat").read_text()


def _rewrite(path: Path, text: str) -> None:
    """Rewrite in place (same inode), so the bind mount over /proc/uptime sees it."""
    with path.open("r+") as fh:
        fh.seek(0)
        fh.write(text)
        fh.truncate()


def iostat_between(
    workdir: Path, name: str, stat_a: str, stat_b: str, uptime_a: float, uptime_b: float
) -> dict[str, Any]:
    """iostat's -x JSON entry for ``name`` over exactly A->B and the chosen uptimes."""
    altdir = workdir / "alt"
    (altdir / "block" / name).mkdir(parents=True, exist_ok=True)
    stat_file = altdir / "block" / name / "stat"
    uptime_file = workdir / "uptime"
    stat_file.write_text(stat_a)
    uptime_file.write_text(f"{uptime_a:.2f} 0.00\n")
    # iostat sleeps 2 s between its reads; we switch A to B in the middle of that sleep.
    script = 'mount --bind "$1" /proc/uptime && exec iostat -d -x -o JSON -f "$2" 2 2'
    proc = subprocess.Popen(
        ["unshare", "-m", "sh", "-c", script, "sh", str(uptime_file), str(altdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)
        _rewrite(stat_file, stat_b)
        _rewrite(uptime_file, f"{uptime_b:.2f} 0.00\n")
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    reports = json.loads(out)["sysstat"]["hosts"][0]["statistics"]
    assert len(reports) == 2, out
    (entry,) = [d for d in reports[1]["disk"] if d["disk_device"] == name]
    return entry


def assert_columns_equal(ours: DeviceRates, theirs: dict[str, Any]) -> None:
    """Every iostat -x column printed with 2 decimals is the same text."""
    mismatches = [
        f"{key}: ours {getattr(ours, attr):.2f} iostat {theirs[key]:.2f}"
        for key, attr in IOSTAT_COLUMNS
        if f"{getattr(ours, attr):.2f}" != f"{theirs[key]:.2f}"
    ]
    assert not mismatches, mismatches
    assert set(theirs) == {"disk_device", *(key for key, _ in IOSTAT_COLUMNS)}


def _rates(stat_a: str, stat_b: str, elapsed: float) -> DeviceRates:
    a, b = parse_sys_stat(stat_a, "x"), parse_sys_stat(stat_b, "x")
    rates = compute_rates(a, b, elapsed)
    assert rates is not None
    return rates


# --- Part 1: exact -------------------------------------------------------------------------


@pytest.mark.parametrize("elapsed", [1.0, 0.37])
def test_real_snapshots_under_load_match_iostat_exactly(
    loaded: Loaded, tmp_path: Path, elapsed: float
) -> None:
    """Two real snapshots of each loaded loop device: iostat and we print the same figures."""
    for name in (loaded.reader, loaded.writer):
        stat_a = _stat_text(name)
        time.sleep(1.0)
        stat_b = _stat_text(name)
        a, b = parse_sys_stat(stat_a, name), parse_sys_stat(stat_b, name)
        assert b.reads > a.reads or b.writes > a.writes, "the fio load did not reach the device"
        theirs = iostat_between(tmp_path / name, name, stat_a, stat_b, 1000.0, 1000.0 + elapsed)
        assert_columns_equal(_rates(stat_a, stat_b, elapsed), theirs)


def _line(values: list[int]) -> str:
    return " ".join(f"{v:8d}" for v in values) + "\n"


#: Synthetic pairs: (what it shows, A, B). Kernel order: reads, merged, sectors, ms, writes,
#: merged, sectors, ms, in flight, io_ticks, weighted ms, discards x4, flushes, flush ms.
SYNTHETIC = {
    "every counter moves": (
        [1000, 17, 9000, 333, 2000, 41, 30001, 777, 3, 5000, 9000, 50, 7, 4096, 90, 70, 31],
        [1457, 29, 12011, 611, 2389, 77, 33337, 1999, 5, 5733, 10951, 61, 9, 5000, 97, 101, 45],
    ),
    "ms counters wrap at 2**32": (
        [
            *(500, 0, 4000, 2**32 - 100, 600, 0, 4800, 2**32 - 7, 1, 2**32 - 300),
            *(2**32 - 1000, 10, 0, 80, 2**32 - 5, 20, 2**32 - 2),
        ],
        [700, 0, 5600, 60, 650, 0, 5200, 13, 2, 400, 250, 12, 0, 96, 3, 24, 6],
    ),
    "io_ticks longer than the interval": (
        [100, 0, 800, 10, 0, 0, 0, 0, 0, 1000, 50, 0, 0, 0, 0, 0, 0],
        [200, 0, 1600, 20, 0, 0, 0, 0, 0, 2700, 150, 0, 0, 0, 0, 0, 0],
    ),
}


@pytest.mark.parametrize("case", list(SYNTHETIC))
def test_synthetic_pairs_match_iostat_exactly(case: str, tmp_path: Path) -> None:
    """Corner cases iostat must agree on: wrap of the 32-bit ms fields, %util over 100."""
    _require_tools()
    before, after = SYNTHETIC[case]
    stat_a, stat_b = _line(before), _line(after)
    theirs = iostat_between(tmp_path, "loop250", stat_a, stat_b, 5000.0, 5001.0)
    assert_columns_equal(_rates(stat_a, stat_b, 1.0), theirs)


# --- Part 2: live, side by side --------------------------------------------------------------


def _mean(entries: list[dict[str, Any]], key: str) -> float:
    return sum(e[key] for e in entries) / len(entries)


def test_snapshot_and_iostat_side_by_side(loaded: Loaded) -> None:
    """Both tools over the same 3 s of steady load: rates within timing, sizes exact."""
    names = [loaded.reader, loaded.writer]
    iostat = subprocess.Popen(
        ["iostat", "-d", "-x", "-y", "-o", "JSON", "1", "3", *names],
        stdout=subprocess.PIPE,
        text=True,
    )
    ours_proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "snapshot",
            "--format",
            "json",
            "-i",
            "1",
            "-c",
            "3",
            *names,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    theirs_out, _ = iostat.communicate(timeout=30)
    assert ours_proc.returncode == 0, ours_proc.stderr
    ours_doc = json.loads(ours_proc.stdout)["sysstat"]["hosts"][0]
    theirs_doc = json.loads(theirs_out)["sysstat"]["hosts"][0]

    assert len(ours_doc["statistics"]) == 3
    assert len(theirs_doc["statistics"]) == 3
    assert ours_doc["release"] == theirs_doc["release"]
    for name in names:
        ours = [d for s in ours_doc["statistics"] for d in s["disk"] if d["disk_device"] == name]
        theirs = [
            d for s in theirs_doc["statistics"] for d in s["disk"] if d["disk_device"] == name
        ]
        assert len(ours) == len(theirs) == 3
        for key, _ in IOSTAT_COLUMNS:
            assert key in ours[0]
        if name == loaded.reader:
            # 4k direct random reads: every read is exactly 4 KiB, and none merge.
            for entry in ours + theirs:
                assert entry["rareq-sz"] == 4.00
                assert entry["rrqm"] == 0.00
                assert entry["w/s"] == 0.00
            pairs = [("r/s", READ_IOPS), ("rkB/s", READ_IOPS * 4)]
        else:
            for entry in ours + theirs:
                assert entry["wareq-sz"] == 4.00
                assert entry["dareq-sz"] == 64.00
                assert entry["r/s"] == 0.00
            pairs = [("w/s", WRITE_IOPS), ("wkB/s", WRITE_IOPS * 4), ("d/s", TRIM_IOPS)]
        for key, target in pairs:
            mine, iostat_mean = _mean(ours, key), _mean(theirs, key)
            # The load is steady, so both tools see the target rate; the windows differ by
            # a few ms of start time, and fio's limiter works in bursts.
            assert mine == pytest.approx(iostat_mean, rel=0.08), key
            assert mine == pytest.approx(target, rel=0.1), key
