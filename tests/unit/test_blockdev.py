"""The shared block-device topology helpers, on small sysfs and procfs trees in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.blockdev import (
    BlockDeviceNames,
    dev_numbers,
    device_name,
    fd_paths,
    mountinfo_entries,
    parse_mountinfo_sources,
    partition_parent,
)
from iotop_plus.sampling.topology.inventory import parse_mountinfo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def sysfs_with_sda(base: Path) -> Roots:
    """Disk sda with partition sda1, laid out as the kernel does (class/block links)."""
    sys = base / "sys"
    disk = sys / "devices" / "pci0000:00" / "block" / "sda"
    (disk / "sda1").mkdir(parents=True)
    (disk / "sda1" / "partition").write_text("1\n")
    for name, target in (("sda", disk), ("sda1", disk / "sda1")):
        (sys / "class" / "block").mkdir(parents=True, exist_ok=True)
        (sys / "class" / "block" / name).symlink_to(target)
    (sys / "dev" / "block").mkdir(parents=True)
    (sys / "dev" / "block" / "8:0").symlink_to("../../devices/pci0000:00/block/sda")
    (sys / "dev" / "block" / "8:1").symlink_to("../../devices/pci0000:00/block/sda/sda1")
    return Roots(proc=base / "proc", sys=sys)


def test_major_minor_names_the_device_through_sys_dev_block(tmp_path: Path) -> None:
    roots = sysfs_with_sda(tmp_path)
    assert device_name(roots, 8, 0) == "sda"
    assert device_name(roots, 8, 1) == "sda1"
    assert device_name(roots, 0, 45) is None  # tmpfs, overlay...: no block device


def test_a_partition_names_its_disk_and_a_disk_names_none(tmp_path: Path) -> None:
    roots = sysfs_with_sda(tmp_path)
    assert partition_parent(roots.sys_class_block / "sda1") == "sda"
    assert partition_parent(roots.sys_class_block / "sda") is None
    assert partition_parent(roots.sys_class_block / "gone") is None


def test_a_partition_kept_outside_its_disk_has_no_known_parent(tmp_path: Path) -> None:
    """A flat captured tree: the directory's parent is class/block itself, not a disk."""
    part = tmp_path / "sys" / "class" / "block" / "sdb1"
    part.mkdir(parents=True)
    (part / "partition").write_text("1\n")
    assert partition_parent(part) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8:0\n", (8, 0)),
        ("259:12", (259, 12)),
        ("8", None),
        ("x:y", None),
        ("-1:0", None),
        ("+8:0", None),
        ("\u00b2:1", None),
        ("8:", None),
    ],
)
def test_dev_numbers_take_ascii_digits_only(text: str, expected: tuple[int, int] | None) -> None:
    assert dev_numbers(text) == expected


def test_mountinfo_entries_decode_mount_points_and_keep_short_tails() -> None:
    text = (
        "38 35 8:1 / /with\\040space\\011tab rw - vfat /dev/sda1 rw\n"
        "39 35 8:2 / /bare rw - \n"
        "broken line\n"
        "40 35 \u00b2:1 / /bad rw - ext4 /dev/x rw\n"
    )
    entries = list(mountinfo_entries(text))
    assert [(e.major, e.minor, e.mountpoint) for e in entries] == [
        (8, 1, "/with space\ttab"),
        (8, 2, "/bare"),
    ]
    assert (entries[0].fstype, entries[0].source, entries[0].super_options) == (
        "vfat",
        "/dev/sda1",
        "rw",
    )
    assert (entries[1].fstype, entries[1].source) == ("?", "")
    # A line naming no source cannot say where a file's I/O goes.
    assert list(parse_mountinfo_sources(text)) == [(8, 1)]


@pytest.mark.parametrize("tree", ["dm", "md", "nvme", "tui_host"])
def test_mountinfo_entries_agree_with_the_inventory_parser(tree: str) -> None:
    """So inventory.parse_mountinfo can be built on mountinfo_entries without a change."""
    text = (FIXTURES / tree / "proc" / "self" / "mountinfo").read_text()
    shared: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for e in mountinfo_entries(text):
        shared.setdefault((e.major, e.minor), []).append((e.mountpoint, e.fstype))
    assert shared == parse_mountinfo(text)
    assert shared


def test_fd_paths_list_open_files_by_number(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        paths = dict(fd_paths(Roots(), os.getpid()))
        assert os.readlink(paths[fd]) == str(tmp_path)
        assert list(paths) == sorted(paths)
    finally:
        os.close(fd)
    assert fd_paths(Roots(proc=tmp_path), 1) == []  # gone, or not ours to read


def test_a_mount_point_that_is_no_utf8_does_not_break_the_mount_table(tmp_path: Path) -> None:
    """Mount points are bytes: a name in Latin-1 is legal and must not raise."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_bytes(
        b"27 1 254:0 / / rw - ext4 /dev/vda rw\n"
        b"40 27 0:45 / /mnt/caf\xe9 rw - btrfs /dev/vdb rw,subvol=/x\n"
    )
    names = BlockDeviceNames(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys"))
    mounts = names.mounts()
    assert (mounts[(254, 0)].source, mounts[(0, 45)].source) == ("/dev/vda", "/dev/vdb")
