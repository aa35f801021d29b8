"""Inventory on the fixture trees, on a real loop device, and on the live host (no udevd)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.inventory import (
    hidden_by_default,
    parse_mountinfo,
    parse_swaps,
    read_inventory,
)

RootsFactory = Callable[[str], Roots]


def test_nvme_partitions_identity_and_mounts(fixture_roots: RootsFactory) -> None:
    inv = read_inventory(fixture_roots("nvme"))
    disk = inv.get("nvme0n1")
    assert disk is not None
    assert disk.kind == "nvme" and not disk.is_partition and disk.parent is None
    assert disk.partitions == ("nvme0n1p1", "nvme0n1p2")
    # Model and serial come from the controller (device/), trailing blanks stripped.
    assert disk.model == "Samsung SSD 980 PRO 1TB"
    assert disk.serial == "S5GXNF0R123456"
    assert disk.wwid == "eui.002538b411b2c3d4"
    assert disk.identity_source == "sysfs"
    assert disk.size_bytes == 1953525168 * 512
    assert disk.rotational is False
    assert (disk.logical_block_size, disk.physical_block_size) == (512, 512)

    root = inv.get("nvme0n1p2")
    assert root is not None
    assert root.is_partition and root.kind == "part" and root.parent == "nvme0n1"
    assert root.mounts == ("/",) and root.fstypes == ("ext4",)
    # Partitions have no queue/ of their own: they report the disk's.
    assert root.rotational is False and root.logical_block_size == 512
    assert root.model == disk.model
    efi = inv.get("nvme0n1p1")
    assert efi is not None and efi.mounts == ("/boot/efi",) and efi.fstypes == ("vfat",)

    assert disk.in_use is False  # the disk itself is not mounted...
    reasons = inv.in_use_reasons("nvme0n1")  # ...but its partitions are.
    assert reasons == ["nvme0n1p1 is mounted on /boot/efi", "nvme0n1p2 is mounted on /"]
    spare = inv.get("nvme0n2")
    assert spare is not None and spare.partitions == () and not spare.in_use
    assert inv.in_use_reasons("nvme0n2") == []


def test_dm_names_slaves_holders_mounts_and_swap(fixture_roots: RootsFactory) -> None:
    inv = read_inventory(fixture_roots("dm"))
    root, swap = inv.get("dm-0"), inv.get("dm-1")
    assert root is not None and swap is not None
    assert (root.kind, root.dm_name, root.friendly_name) == ("dm", "vg0-root", "vg0-root")
    assert root.slaves == ("sda2",) and swap.slaves == ("sda2",)
    assert root.mounts == ("/", "/srv data")  # mountinfo's \040 is a space
    assert root.fstypes == ("xfs", "xfs")
    assert swap.swap and swap.mounts == () and swap.in_use
    sda2 = inv.get("sda2")
    assert sda2 is not None and sda2.holders == ("dm-0", "dm-1") and sda2.parent == "sda"
    sda = inv.get("sda")
    assert sda is not None and sda.vendor == "DELL" and sda.model == "PERC H730P Mini"
    assert sda.rotational is True and sda.physical_block_size == 4096
    assert inv.in_use_reasons("sda") == [
        "sda1 is mounted on /boot",
        "sda2 is held by dm-0",
        "sda2 is held by dm-1",
    ]
    assert inv.in_use_reasons("dm-1") == ["dm-1 is active swap"]
    # Lookup by kernel name, dm name and /dev paths.
    for spelling in ("dm-0", "vg0-root", "/dev/dm-0", "/dev/mapper/vg0-root"):
        found = inv.lookup(spelling)
        assert found is not None and found.name == "dm-0", spelling
    assert inv.lookup("vg0-nothing") is None
    assert "dm-1" in inv and "dm-7" not in inv


def test_swap_named_by_mapper_path(tmp_path: Path, fixture_roots: RootsFactory) -> None:
    """/proc/swaps may list /dev/mapper/NAME instead of /dev/dm-N."""
    src = fixture_roots("dm")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "swaps").write_text(
        "Filename Type Size Used Priority\n/dev/mapper/vg0-swap partition 8388604 0 -2\n"
        "/swapfile file 1048572 0 -3\n"
    )
    inv = read_inventory(Roots(proc=proc, sys=src.sys))
    assert [d.name for d in inv.devices.values() if d.swap] == ["dm-1"]


def test_md_level_and_members(fixture_roots: RootsFactory) -> None:
    inv = read_inventory(fixture_roots("md"))
    md0 = inv.get("md0")
    assert md0 is not None
    assert (md0.kind, md0.md_level) == ("md", "raid1")
    assert md0.slaves == ("sdb1", "sdc1")
    assert md0.mounts == ("/data",)
    for member in ("sdb1", "sdc1"):
        dev = inv.get(member)
        assert dev is not None and dev.holders == ("md0",) and dev.is_partition
    assert inv.in_use_reasons("sdc") == ["sdc1 is held by md0"]
    sdb = inv.get("sdb")
    assert sdb is not None and sdb.vendor == "ATA" and sdb.model == "WDC WD40EFRX-68N"


def test_tree_without_sysfs_gives_an_empty_inventory(fixture_roots: RootsFactory) -> None:
    assert read_inventory(fixture_roots("kernel-4.14")).devices == {}


@pytest.mark.root
def test_real_loop_device_backing_file_size_and_kind(
    make_loop: Callable[..., str], tmp_path: Path
) -> None:
    name = make_loop(size_mb=16)
    inv = read_inventory(Roots())
    dev = inv.get(name)
    assert dev is not None
    assert dev.kind == "loop" and dev.hidden_by_default
    assert dev.loop_backing_file == str(tmp_path / "backing0.img")
    assert dev.size_bytes == 16 * 1024 * 1024
    assert dev.logical_block_size == 512
    assert dev.partitions == () and dev.parent is None
    major, minor = (int(x) for x in Path(f"/sys/block/{name}/dev").read_text().split(":"))
    assert (dev.major, dev.minor) == (major, minor)


@pytest.mark.root
def test_real_mount_is_found_by_major_minor(make_loop: Callable[..., str], tmp_path: Path) -> None:
    """A filesystem made and mounted here shows up on the loop device, then goes away."""
    name = make_loop(size_mb=16)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mkfs = subprocess.run(["mkfs.ext4", "-q", f"/dev/{name}"], capture_output=True, text=True)
    if mkfs.returncode != 0:
        pytest.skip(f"mkfs.ext4 failed here: {mkfs.stderr.strip()}")
    subprocess.run(["mount", f"/dev/{name}", str(mnt)], check=True)
    try:
        dev = read_inventory(Roots()).get(name)
        assert dev is not None and dev.mounts == (str(mnt),) and dev.fstypes == ("ext4",)
        assert read_inventory(Roots()).in_use_reasons(name) == [f"{name} is mounted on {mnt}"]
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    dev = read_inventory(Roots()).get(name)
    assert dev is not None and dev.mounts == ()


def test_udev_without_udevd_falls_back_to_sysfs() -> None:
    """udevd is not running here: pyudev has no ID_SERIAL, so sysfs answers."""
    if Path("/run/udev/data").is_dir():
        pytest.skip("udevd has a database on this host; the fallback is not exercised")
    inv = read_inventory(Roots(), use_udev=True)
    disks = [d for d in inv.devices.values() if not d.hidden_by_default and not d.is_partition]
    assert disks, "no real disk on this host"
    for dev in disks:
        assert dev.identity_source == "sysfs"
    vda = inv.get("vda")
    if vda is not None:
        # virtio-blk keeps its serial beside the disk rather than under device/.
        assert vda.serial == Path("/sys/block/vda/serial").read_text().strip()


def test_live_inventory_matches_lsblk_for_whole_disks() -> None:
    """Sizes and major:minor of the live disks agree with lsblk."""
    out = subprocess.run(
        ["lsblk", "-b", "-d", "-n", "-o", "KNAME,MAJ:MIN,SIZE"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip("lsblk is not available")
    inv = read_inventory(Roots())
    for line in out.stdout.splitlines():
        kname, majmin, size = line.split()
        if kname.startswith("loop"):
            continue  # other tests attach and detach loop devices concurrently
        dev = inv.get(kname)
        assert dev is not None, kname
        assert f"{dev.major}:{dev.minor}" == majmin
        assert dev.size_bytes == int(size)


def test_parse_mountinfo_skips_malformed_lines() -> None:
    text = (
        "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
        "broken line\n"
        "37 35 x:y / /bad rw - ext4 /dev/x rw\n"
        "38 35 8:1 / /with\\040space\\011tab rw - vfat /dev/sda1 rw\n"
    )
    assert parse_mountinfo(text) == {
        (98, 0): [("/mnt2", "ext3")],
        (8, 1): [("/with space\ttab", "vfat")],
    }


def test_parse_swaps() -> None:
    text = "Filename Type Size Used Priority\n/dev/sda3 partition 100 0 -2\n\n/swap file 5 0 -3\n"
    assert parse_swaps(text) == ["/dev/sda3", "/swap"]


@pytest.mark.parametrize(
    ("name", "hidden"),
    [("loop0", True), ("ram12", True), ("zram0", True), ("sda", False), ("loopy", False)],
)
def test_hidden_by_default(name: str, hidden: bool) -> None:
    assert hidden_by_default(name) is hidden


def _virtual_disk_tree(tmp_path: Path, name: str, driver: str, bus: str) -> Roots:
    """A one-disk sysfs tree laid out as the kernel does for a paravirtual disk: the disk
    under ``.../BUS/block/NAME``, ``device`` linking to the bus device and ``driver`` to the
    driver, and rotational=1 as virtio-blk reports whatever the host stores it on."""
    sys_root = tmp_path / "sys"
    bus_dev = sys_root / "devices" / "pci0000:00" / "0000:00:02.0" / bus
    disk = bus_dev / "block" / name
    (disk / "queue").mkdir(parents=True)
    (disk / "dev").write_text("254:0\n")
    (disk / "size").write_text("2097152\n")
    (disk / "queue" / "rotational").write_text("1\n")
    drivers = sys_root / "bus" / "virtio" / "drivers" / driver
    drivers.mkdir(parents=True)
    (bus_dev / "driver").symlink_to(drivers)
    (disk / "device").symlink_to(bus_dev)
    for where in ("block", "class/block"):
        (sys_root / where).mkdir(parents=True, exist_ok=True)
        (sys_root / where / name).symlink_to(disk)
    (tmp_path / "proc").mkdir()
    return Roots(proc=tmp_path / "proc", sys=sys_root)


def test_virtio_disk_is_virtual_not_a_spinning_disk(tmp_path: Path) -> None:
    """rotational=1 is what virtio-blk always says: the driver, not the flag, decides."""
    inv = read_inventory(_virtual_disk_tree(tmp_path, "vda", "virtio_blk", "virtio1"))
    vda = inv.get("vda")
    assert vda is not None and vda.rotational is True
    assert vda.device_class == "virtual"
    assert vda.class_text == "virtual disk: the host decides its speed"
    assert vda.seeks is False  # judged against the non-rotational await thresholds


def test_real_virtio_disk_of_this_host_is_virtual() -> None:
    vda = read_inventory(Roots()).get("vda")
    if vda is None or not Path("/sys/block/vda/device/driver").exists():
        pytest.skip("this host has no virtio disk vda")
    assert vda.device_class == "virtual" and vda.seeks is False


def test_emulated_scsi_disk_is_virtual_by_its_vendor(tmp_path: Path) -> None:
    roots = _virtual_disk_tree(tmp_path, "sda", "sd", "host0")
    (roots.sys / "block" / "sda" / "device" / "vendor").write_text("QEMU    \n")
    inv = read_inventory(roots, use_udev=False)
    sda = inv.get("sda")
    assert sda is not None and sda.vendor == "QEMU" and sda.device_class == "virtual"


def test_loop_device_is_loop_whatever_rotational_says(make_loop: Callable[..., str]) -> None:
    """A loop device inherits rotational from nowhere in particular (1 on this host's
    virtio-backed loops, 0 elsewhere): it is a loop device, not a disk of either kind."""
    name = make_loop(size_mb=16)
    dev = read_inventory(Roots()).get(name)
    assert dev is not None
    assert dev.device_class == "loop" and dev.seeks is False
    assert "backing file" in dev.class_text


@pytest.mark.parametrize(
    ("tree", "expected"),
    [
        (
            "nvme",
            {"nvme0n1": "nvme", "nvme0n1p2": "nvme", "nvme0n2": "nvme"},
        ),
        ("dm", {"sda": "hdd", "sda2": "hdd", "dm-0": "dm", "dm-1": "dm"}),
        ("md", {"sdb": "hdd", "sdb1": "hdd", "md0": "md"}),
    ],
)
def test_fixture_trees_are_classified(
    fixture_roots: RootsFactory, tree: str, expected: dict[str, str]
) -> None:
    inv = read_inventory(fixture_roots(tree))
    assert {name: inv.devices[name].device_class for name in expected} == expected


def test_dm_and_md_volumes_are_judged_by_the_disks_below(fixture_roots: RootsFactory) -> None:
    dm0 = read_inventory(fixture_roots("dm")).get("dm-0")
    md0 = read_inventory(fixture_roots("md")).get("md0")
    assert dm0 is not None and md0 is not None
    assert dm0.backing_class == "hdd" and dm0.seeks is True
    assert dm0.class_text == "device-mapper on HDD"
    assert md0.backing_class == "hdd" and md0.media_class == "hdd"


def test_kernel_trees_without_sysfs_classify_nothing(fixture_roots: RootsFactory) -> None:
    for tree in ("kernel-2.6", "kernel-4.14", "kernel-5.4"):
        assert read_inventory(fixture_roots(tree)).devices == {}
