"""What block devices exist and how they relate: disks, partitions, dm, md, loop, mounts.

Everything is read from sysfs under ``Roots.sys`` and from ``mountinfo``/``swaps`` under
``Roots.proc``. Model, vendor and serial come from udev (pyudev) when udevd has recorded them,
and from sysfs otherwise; udevd is often absent (containers, minimal VMs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import MAX_ATTRIBUTE_BYTES, MAX_SOURCE_BYTES, read_bounded

SECTOR = 512

_HIDDEN_BY_DEFAULT = re.compile(r"^(loop|ram|zram)\d+$")


@dataclass(frozen=True)
class BlockDevice:
    """One block device as sysfs describes it."""

    name: str
    """Kernel name, e.g. ``sda``, ``nvme0n1p2``, ``dm-0``."""
    major: int
    """Major number."""
    minor: int
    """Minor number."""
    kind: str
    """One of ``disk``, ``part``, ``dm``, ``md``, ``loop``, ``ram``, ``zram``, ``nvme``."""
    parent: str | None = None
    """For a partition, the whole disk it belongs to."""
    partitions: tuple[str, ...] = ()
    """For a whole disk, its partitions in order."""
    dm_name: str | None = None
    """For device-mapper devices, the name from ``dm/name`` (e.g. ``vg0-data``)."""
    md_level: str | None = None
    """For md devices, the RAID level (``raid1``...)."""
    slaves: tuple[str, ...] = ()
    """Devices this one sits on (dm and md)."""
    holders: tuple[str, ...] = ()
    """Devices built on this one."""
    size_bytes: int = 0
    """Capacity in bytes."""
    rotational: bool | None = None
    """True for spinning disks; None when the queue does not say (partitions inherit)."""
    logical_block_size: int | None = None
    """Logical block size in bytes."""
    physical_block_size: int | None = None
    """Physical block size in bytes."""
    read_only: bool = False
    """Whether the kernel marks the device read-only."""
    model: str | None = None
    """Model string (udev, else sysfs ``device/model``)."""
    vendor: str | None = None
    """Vendor string (udev, else sysfs ``device/vendor``)."""
    serial: str | None = None
    """Serial number (udev ``ID_SERIAL_SHORT``, else sysfs ``device/serial``)."""
    wwid: str | None = None
    """World-wide identifier (udev ``ID_WWN`` or sysfs ``wwid``/``device/wwid``)."""
    identity_source: str = "sysfs"
    """Where model/serial came from: ``udev`` or ``sysfs``."""
    loop_backing_file: str | None = None
    """For loop devices, the backing file."""
    mounts: tuple[str, ...] = ()
    """Mount points of filesystems on this device."""
    fstypes: tuple[str, ...] = ()
    """Filesystem types of those mounts."""
    swap: bool = False
    """Whether the device is active swap."""

    @property
    def friendly_name(self) -> str:
        """The name a person knows it by: the dm name for dm devices, else the kernel name."""
        return self.dm_name or self.name

    @property
    def is_partition(self) -> bool:
        """True for partitions."""
        return self.kind == "part"

    @property
    def hidden_by_default(self) -> bool:
        """Loop, ram and zram devices are hidden unless the user asks for all devices."""
        return self.kind in ("loop", "ram", "zram")

    @property
    def in_use(self) -> bool:
        """Mounted, swap or held by another device."""
        return bool(self.mounts or self.swap or self.holders)


@dataclass(frozen=True)
class Inventory:
    """All block devices at one moment, by kernel name."""

    devices: Mapping[str, BlockDevice] = field(default_factory=dict)
    """Devices by kernel name."""

    def get(self, name: str) -> BlockDevice | None:
        """The device called ``name``, or None."""
        return self.devices.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.devices

    def lookup(self, name: str) -> BlockDevice | None:
        """Find a device by kernel name, dm name, ``/dev/...`` or ``/dev/mapper/...`` path."""
        base = name.removeprefix("/dev/mapper/").removeprefix("/dev/")
        dev = self.devices.get(base)
        if dev is not None:
            return dev
        for dev in self.devices.values():
            if dev.dm_name == base:
                return dev
        return None

    def in_use_reasons(self, name: str) -> list[str]:
        """Why writing to ``name`` would hurt someone: mounts, swap and holders of it and
        of its partitions. Empty when nothing is known to use it."""
        dev = self.devices.get(name)
        if dev is None:
            return []
        reasons: list[str] = []
        for member in (dev, *(self.devices[p] for p in dev.partitions if p in self.devices)):
            reasons += [f"{member.name} is mounted on {m}" for m in member.mounts]
            if member.swap:
                reasons.append(f"{member.name} is active swap")
            reasons += [f"{member.name} is held by {h}" for h in member.holders]
        return reasons


def _read(path: Path, limit: int = MAX_ATTRIBUTE_BYTES) -> str | None:
    """A sysfs attribute (or, with a larger ``limit``, a /proc table), stripped; None when
    it is missing, unreadable, not a regular file or over ``limit`` (see read_bounded)."""
    try:
        return read_bounded(path, limit).strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _listdir(path: Path) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except OSError:
        return ()


def _kind(name: str, is_partition: bool, sysdir: Path) -> str:
    if is_partition:
        return "part"
    for prefix in ("loop", "zram", "ram", "dm-", "md", "nvme"):
        if name.startswith(prefix):
            return prefix.rstrip("-")
    if (sysdir / "dm").is_dir():
        return "dm"
    if (sysdir / "md").is_dir():
        return "md"
    return "disk"


def parse_mountinfo(text: str) -> dict[tuple[int, int], list[tuple[str, str]]]:
    """Map ``(major, minor)`` to ``[(mount point, fstype)]`` from mountinfo text.

    Format (proc(5)): ``id parent major:minor root mountpoint options [optional...] - fstype
    source superopts``. Malformed lines are skipped.
    """
    out: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        parts = left.split()
        if not sep or len(parts) < 5:
            continue
        major_s, _, minor_s = parts[2].partition(":")
        try:
            key = (int(major_s), int(minor_s))
        except ValueError:
            continue
        mountpoint = parts[4].replace("\\040", " ").replace("\\011", "\t")
        fstype = right.split()[0] if right.split() else "?"
        out.setdefault(key, []).append((mountpoint, fstype))
    return out


def parse_swaps(text: str) -> list[str]:
    """The ``Filename`` column of /proc/swaps (devices and swap files)."""
    names = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if (parts and parts[1:2] == ["partition"]) or parts:
            names.append(parts[0])
    return names


UDEV_DATABASE = "/run/udev/data"
"""Where udevd records device properties (libudev, hence pyudev, reads them from here)."""


def _udev_identity(names: Iterable[str]) -> dict[str, dict[str, str]]:
    """Model/vendor/serial/WWN from the udev database, for the names udev knows.

    Returns an empty map when pyudev or udev's database is unavailable. Without the database
    (no udevd, as in many containers) pyudev is not even imported: it would cost ~30 ms and
    a lookup per device to learn nothing.
    """
    if not os.path.isdir(UDEV_DATABASE):
        return {}
    try:
        import pyudev  # deferred: costs ~30 ms and is optional at run time
    except ImportError:
        return {}
    out: dict[str, dict[str, str]] = {}
    try:
        context = pyudev.Context()
        for name in names:
            try:
                dev = pyudev.Devices.from_name(context, "block", name)
            except Exception:
                continue
            props = {
                key: str(dev.properties[key])
                for key in ("ID_MODEL", "ID_VENDOR", "ID_SERIAL_SHORT", "ID_SERIAL", "ID_WWN")
                if dev.properties.get(key)
            }
            if props:
                out[name] = props
    except Exception:
        return {}
    return out


def read_inventory(roots: Roots, use_udev: bool | None = None) -> Inventory:
    """Describe every block device under ``roots``.

    Args:
        roots: Where to read.
        use_udev: Ask udev for model/serial. Defaults to True only on the live roots, since
            udev's database describes the host, not a captured tree.
    """
    class_block = roots.sys_class_block
    sys_block = roots.sys_block
    if use_udev is None:
        use_udev = roots.is_live

    names = _listdir(class_block) or _listdir(sys_block)
    mounts_text = _read(roots.proc / "self" / "mountinfo", MAX_SOURCE_BYTES) or ""
    mounts = parse_mountinfo(mounts_text)
    swaps_text = _read(roots.proc / "swaps", MAX_SOURCE_BYTES) or ""
    swap_paths = parse_swaps(swaps_text)

    raw: dict[str, dict[str, object]] = {}
    for name in names:
        sysdir = class_block / name if (class_block / name).exists() else sys_block / name
        dev = _read(sysdir / "dev")
        if dev is None or ":" not in dev:
            continue
        major_s, _, minor_s = dev.partition(":")
        try:
            major, minor = int(major_s), int(minor_s)
        except ValueError:
            continue
        is_part = (sysdir / "partition").exists()
        info: dict[str, object] = {"major": major, "minor": minor, "sysdir": sysdir}
        info["kind"] = _kind(name, is_part, sysdir)
        if is_part:
            try:
                info["parent"] = sysdir.resolve().parent.name
            except OSError:
                info["parent"] = None
            if not info["parent"] or info["parent"] == "block":
                info["parent"] = _guess_parent(name, names)
        raw[name] = info

    # Partitions of each disk, in name order.
    parts_of: dict[str, list[str]] = {}
    for name, info in raw.items():
        parent = info.get("parent")
        if isinstance(parent, str):
            parts_of.setdefault(parent, []).append(name)

    # Swap entries: /dev/NAME, /dev/mapper/DMNAME, or a swap file (not a device).
    dm_names = {
        name: _read(Path(str(info["sysdir"])) / "dm" / "name") for name, info in raw.items()
    }
    by_dm = {v: k for k, v in dm_names.items() if v}
    swap_devs: set[str] = set()
    for path in swap_paths:
        if path.startswith("/dev/mapper/"):
            found = by_dm.get(path.removeprefix("/dev/mapper/"))
            if found:
                swap_devs.add(found)
        elif path.startswith("/dev/"):
            swap_devs.add(path.removeprefix("/dev/"))

    udev = _udev_identity(raw) if use_udev else {}

    devices: dict[str, BlockDevice] = {}
    for name, info in raw.items():
        sysdir = Path(str(info["sysdir"]))
        major, minor = int(str(info["major"])), int(str(info["minor"]))
        parent = info.get("parent")
        parent_name = parent if isinstance(parent, str) else None
        # Partitions have no queue/ of their own: their settings are the parent disk's.
        qdir = (sys_block / parent_name / "queue") if parent_name else (sysdir / "queue")
        rot = _read_int(qdir / "rotational")
        ident = udev.get(name) or (udev.get(parent_name, {}) if parent_name else {})
        devdir = (sys_block / parent_name / "device") if parent_name else (sysdir / "device")
        # Only hardware has a device/ directory: loop, dm, md, ram and zram devices would fail
        # six opens here, ~190 loop nodes on a typical container host, before the first frame.
        hardware = os.path.isdir(devdir)
        model = ident.get("ID_MODEL") or (_read(devdir / "model") if hardware else None)
        vendor = ident.get("ID_VENDOR") or (_read(devdir / "vendor") if hardware else None)
        # virtio-blk puts the serial beside the disk (vda/serial), not under device/.
        diskdir = (sys_block / parent_name) if parent_name else sysdir
        serial = ident.get("ID_SERIAL_SHORT") or (
            (_read(devdir / "serial") or _read(diskdir / "serial")) if hardware else None
        )
        wwid = ident.get("ID_WWN") or (
            (_read(sysdir / "wwid") or _read(devdir / "wwid")) if hardware else None
        )
        md_level = _read(sysdir / "md" / "level") if info["kind"] == "md" else None
        mount_list = mounts.get((major, minor), [])
        size = _read_int(sysdir / "size")
        devices[name] = BlockDevice(
            name=name,
            major=major,
            minor=minor,
            kind=str(info["kind"]),
            parent=parent_name,
            partitions=tuple(parts_of.get(name, ())),
            dm_name=dm_names.get(name) or None,
            md_level=md_level,
            slaves=_listdir(sysdir / "slaves"),
            holders=_listdir(sysdir / "holders"),
            size_bytes=(size or 0) * SECTOR,
            rotational=None if rot is None else bool(rot),
            logical_block_size=_read_int(qdir / "logical_block_size"),
            physical_block_size=_read_int(qdir / "physical_block_size"),
            read_only=_read_int(sysdir / "ro") == 1,
            model=model or None,
            vendor=vendor or None,
            serial=serial or None,
            wwid=wwid or None,
            identity_source="udev" if ident else "sysfs",
            loop_backing_file=(
                _read(sysdir / "loop" / "backing_file") if info["kind"] == "loop" else None
            ),
            mounts=tuple(m for m, _ in mount_list),
            fstypes=tuple(f for _, f in mount_list),
            swap=name in swap_devs,
        )
    return Inventory(devices)


def _guess_parent(name: str, names: Iterable[str]) -> str | None:
    """Longest other device name that prefixes a partition's name (``nvme0n1p1``)."""
    best = None
    for other in names:
        if other != name and name.startswith(other) and (best is None or len(other) > len(best)):
            best = other
    return best


def hidden_by_default(name: str) -> bool:
    """Loop, ram and zram devices are hidden unless all devices are shown."""
    return bool(_HIDDEN_BY_DEFAULT.match(name))
