"""When the kernel refuses root the device, the probe says so, and a mounted device is named
as mounted before anything is opened (#22 item 11).

Before the fix, ``probe wal --target /dev/vda`` as root said "permission denied (run as
root...)": the device was opened before the mount was checked, and every EPERM read as "run as
root". Here a v1 devices cgroup plays the sandbox: it denies the test's own loop device to
the probe, as the host's sandbox denies /dev/vda to root.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.mounts import unmount

pytestmark = [pytest.mark.slow, pytest.mark.root]

DEVICES_CGROUP = Path("/sys/fs/cgroup/devices")


@contextmanager
def _denied(dev: str) -> Iterator[list[str]]:
    """An argv prefix that runs a command in a devices cgroup denying ``/dev/dev``."""
    if not (DEVICES_CGROUP / "devices.deny").exists():
        pytest.skip("no cgroup v1 devices controller to deny a device with")
    group = DEVICES_CGROUP / f"iotop-plus-test-{os.getpid()}-{dev}"
    group.mkdir()
    try:
        numbers = Path(f"/sys/class/block/{dev}/dev").read_text().strip()
        (group / "devices.deny").write_text(f"b {numbers} rwm\n")
        yield ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh"]
    finally:
        group.rmdir()  # its processes have exited: subprocess.run waited for them


def _probe(prefix: list[str], state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "probe", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_mounted_device_the_kernel_refuses_root_is_named_mounted_not_permission_denied(
    tmp_path: Path, make_loop: Callable[..., str]
) -> None:
    dev = make_loop(size_mb=64)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        with _denied(dev) as prefix:
            proc = _probe(
                prefix, tmp_path / "state", "wal", "-t", f"/dev/{dev}", "--confirm", dev, "-r", "1"
            )
    finally:
        unmount(str(mnt))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"iotop-plus: probe failed: refusing to write to /dev/{dev}: {dev} is mounted on {mnt} "
        "(pick a directory instead)\n"
    )


def test_root_refused_by_the_kernel_is_told_it_is_a_sandbox_not_to_run_as_root(
    tmp_path: Path, make_loop: Callable[..., str]
) -> None:
    dev = make_loop(size_mb=64)
    with _denied(dev) as prefix:
        proc = _probe(prefix, tmp_path / "state", "randread", "-t", f"/dev/{dev}", "-r", "1")
    assert proc.returncode == 1
    assert proc.stderr == (
        f"iotop-plus: probe failed: the kernel refused to open /dev/{dev} (a sandbox or "
        "security module, not a permission you can grant)\n"
    )
    assert "run as root" not in proc.stderr
