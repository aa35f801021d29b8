"""Mount points with a space, a backslash and a newline, read back from the real mountinfo.

The kernel writes those characters (and tab) in mountinfo as octal escapes: ``\\040`` space,
``\\011`` tab, ``\\012`` newline, ``\\134`` backslash. Both readers (the inventory's, used by the
safety checks, and the open-files one) share one parser that must give the path back exactly.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.blockdev import (
    BlockDeviceNames,
    mountinfo_entries,
    read_dev_numbers,
    unescape_mount_path,
)
from iotop_plus.sampling.topology.inventory import parse_mountinfo, read_inventory

AWKWARD = "a b\\c\nd\te"
"""A directory name with a space, a backslash, a newline and a tab."""


def test_every_kernel_escape_is_decoded() -> None:
    assert unescape_mount_path("/mnt/a\\040b\\134c\\012d\\011e") == "/mnt/a b\\c\nd\te"
    assert unescape_mount_path("/plain/path") == "/plain/path"


@pytest.fixture
def awkward_mount(make_loop: Callable[..., str], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An ext4 loop device made here, mounted on a directory named :data:`AWKWARD`."""
    name = make_loop(size_mb=16)
    mnt = tmp_path / AWKWARD
    mnt.mkdir()
    mkfs = subprocess.run(["mkfs.ext4", "-q", f"/dev/{name}"], capture_output=True, text=True)
    if mkfs.returncode != 0:
        pytest.skip(f"mkfs.ext4 failed here: {mkfs.stderr.strip()}")
    subprocess.run(["mount", f"/dev/{name}", str(mnt)], check=True)
    try:
        yield name, mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.root
def test_a_mount_path_with_space_backslash_and_newline_is_read_exactly(
    awkward_mount: tuple[str, Path],
) -> None:
    name, mnt = awkward_mount
    # other tests' mount points may hold any bytes: read them as the tool does
    text = Path("/proc/self/mountinfo").read_bytes().decode("utf-8", "surrogateescape")
    assert "\\134" in text and "\\012" in text  # the kernel escaped them
    numbers = read_dev_numbers(Roots(), name)
    assert numbers is not None
    st = os.stat(mnt)
    assert numbers == (os.major(st.st_dev), os.minor(st.st_dev))

    assert parse_mountinfo(text)[numbers] == [(str(mnt), "ext4")]
    (entry,) = [e for e in mountinfo_entries(text) if (e.major, e.minor) == numbers]
    assert (entry.mountpoint, entry.source) == (str(mnt), f"/dev/{name}")
    assert BlockDeviceNames(Roots()).mounts()[numbers].mountpoint == str(mnt)

    inventory = read_inventory(Roots())
    device = inventory.get(name)
    assert device is not None and device.mounts == (str(mnt),)
    assert inventory.in_use_reasons(name) == [f"{name} is mounted on {mnt}"]


@pytest.mark.root
def test_a_refusal_naming_a_mount_path_with_a_newline_is_still_one_line(
    awkward_mount: tuple[str, Path], tmp_path: Path
) -> None:
    # Decoded exactly, the path now holds a real newline; the refusal must not break in two.
    import sys

    name, _mnt = awkward_mount
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "--state-dir",
            str(tmp_path / "state"),
            "probe",
            "wal",
            "--target",
            f"/dev/{name}",
            "--no-trace",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "mounted" in lines[0] and "a b\\c\\x0ad\\x09e" in lines[0], lines[0]
