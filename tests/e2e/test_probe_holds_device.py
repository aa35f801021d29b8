"""A confirmed write probe holds its device: nobody can make or mount a filesystem on it
until fio has exited (#22 item 1).

Before the fix the device was checked, then held by an ordinary descriptor: an ``mkfs`` and
a ``mount`` by someone else during the probe succeeded, and the probe then overwrote the new
filesystem and exited 0.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.target import TargetError, plan_target
from iotop_plus.roots import Roots
from tests.support.mounts import unmount
from tests.support.probe_targets import unless_losetup

pytestmark = [pytest.mark.slow, pytest.mark.root]

RUNTIME_S = 8


def _wait_for_progress(probe: subprocess.Popen[str], timeout: float = 60) -> list[str]:
    """stderr lines of the CLI probe up to its first progress line (fio is writing)."""
    assert probe.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = probe.stderr.readline()
        if not line:
            break
        seen.append(line)
        if re.match(rf"\s+\d+/{RUNTIME_S} s\s", line):
            return seen
    raise AssertionError(f"the probe never reported progress: {''.join(seen)!r}")


def _started_probe(argv: list[str], dev: str, tries: int = 3) -> subprocess.Popen[str]:
    """The CLI probe, once fio is writing.

    Another test's ``losetup --find`` can hold ``dev`` open for a moment (it was offered the
    number just before this test's attach took it), and the probe rightly refuses a device
    someone has open: only that refusal is tried again.
    """
    for _ in range(tries):
        probe = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )  # fmt: skip
        try:
            _wait_for_progress(probe)
            return probe
        except AssertionError as exc:
            probe.kill()
            probe.wait()
            if f"(losetup) has /dev/{dev} open" not in str(exc):
                raise
    raise AssertionError(f"losetup kept /dev/{dev} open through {tries} tries")


def test_mkfs_and_mount_during_a_confirmed_write_probe_get_ebusy(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    argv = [
        sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"),
        "probe", "wal", "-t", f"/dev/{dev}", "--confirm", dev, "-r", str(RUNTIME_S), "--no-trace",
    ]  # fmt: skip
    probe = _started_probe(argv, dev)
    try:
        # Another user's shell, mid-probe: a new filesystem, then a mount of it.
        mkfs = subprocess.run(
            ["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], capture_output=True, text=True, check=False
        )
        mount = subprocess.run(
            ["mount", f"/dev/{dev}", str(mnt)], capture_output=True, text=True, check=False
        )
        still_probing = probe.poll() is None
        out, err = probe.communicate(timeout=120)
    finally:
        probe.kill()
        probe.wait()
        unmount(str(mnt))
    assert still_probing, "the probe ended before mkfs and mount were tried"
    assert mkfs.returncode != 0, "mkfs made a filesystem on a device a write probe was using"
    assert "apparently in use by the system" in mkfs.stderr
    assert mount.returncode != 0, "a device a write probe was using got mounted"
    assert "busy" in mount.stderr
    assert probe.returncode == 0, err
    assert "wal" in out and "Traceback" not in err

    # The claim ends with fio: the device is free again, and a filesystem made now is
    # refused by the next write probe rather than destroyed by it.
    made = subprocess.run(
        ["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, made.stderr
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        (mnt / "precious.txt").write_text("precious\n")
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)
    wal = PRESETS["wal"]
    with pytest.raises(TargetError, match=f"{dev} holds an ext4 filesystem"):
        unless_losetup(lambda: plan_target(f"/dev/{dev}", wal, wal.params, Roots(), confirm=dev))
    subprocess.run(["mount", "-o", "ro", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        assert (mnt / "precious.txt").read_text() == "precious\n"
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)
