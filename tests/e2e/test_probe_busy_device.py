"""Read probes and sweeps on a device in use say so (#22 item 11): before, a read probe or a
sweep up to QD 128 started on a mounted, busy device without a word."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.mounts import unmount

pytestmark = [pytest.mark.slow, pytest.mark.root]


@contextmanager
def _mounted(dev: str, mnt: Path) -> Iterator[Path]:
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    mnt.mkdir()
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        yield mnt
    finally:
        unmount(str(mnt))


def _cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), *args, "--quiet"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("iotop-plus: note:")]


def test_a_read_probe_and_a_sweep_on_a_mounted_device_say_so_in_one_line_and_run(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    with _mounted(dev, tmp_path / "mnt") as mnt:
        probe = _cli(tmp_path / "state", "probe", "randread", "-t", f"/dev/{dev}", "-r", "1")
        sweep = _cli(
            tmp_path / "state", "sweep", "-t", f"/dev/{dev}", "--max-qd", "1",
            "--step-runtime", "1",
        )  # fmt: skip
    for proc in (probe, sweep):
        assert proc.returncode == 0, proc.stderr
        notes = _notes(proc.stderr)
        assert len(notes) == 1, proc.stderr
        assert (
            notes[0].startswith(f"iotop-plus: note: /dev/{dev} is in use (mounted on {mnt}; ")
            and " IOPS measured over 1 s): the probe adds its reads to that load" in notes[0]
        )


def test_a_read_probe_on_an_unmounted_device_at_50_iops_says_so_and_an_idle_one_does_not(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    idle = _cli(tmp_path / "state", "probe", "randread", "-t", f"/dev/{dev}", "-r", "1")
    assert idle.returncode == 0 and _notes(idle.stderr) == [], idle.stderr
    # Someone else's reader: direct 4k reads, over and over, far above 50 IOPS.
    reader = subprocess.Popen(
        ["sh", "-c", f"while :; do dd if=/dev/{dev} of=/dev/null bs=4k count=2000 "
         "iflag=direct status=none; done"],
    )  # fmt: skip
    try:
        busy = _cli(tmp_path / "state", "probe", "randread", "-t", f"/dev/{dev}", "-r", "1")
    finally:
        reader.kill()
        reader.wait()
    assert busy.returncode == 0, busy.stderr
    notes = _notes(busy.stderr)
    assert len(notes) == 1 and f"/dev/{dev} is in use (" in notes[0] and "mounted" not in notes[0]
    iops = float(notes[0].split("(")[1].split(" IOPS")[0].replace(",", ""))
    assert iops >= 50
