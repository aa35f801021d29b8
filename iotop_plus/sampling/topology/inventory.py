"""What block devices exist and how they relate: disks, partitions, dm, md, loop, mounts.

Everything is read from sysfs under ``Roots.sys`` and from ``mountinfo``/``swaps`` under
``Roots.proc``. Model, vendor and serial come from udev (pyudev) when udevd has recorded them,
and from sysfs otherwise; udevd is often absent (containers, minimal VMs).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.blockdev import dev_numbers, file_device, mountinfo_entries
from iotop_plus.sampling.topology.udev_identity import udev_identity
from iotop_plus.sysfs import MAX_SOURCE_BYTES, read_attribute

SECTOR = 512

HIDDEN_KINDS = ("loop", "ram", "zram")
"""Device kinds hidden unless the user asks for all devices (loop, ram and zram)."""
_HIDDEN_BY_DEFAULT = re.compile(rf"^({'|'.join(HIDDEN_KINDS)})\d+$")

#: Every device class, in plain words. The kernel's ``rotational`` flag alone misleads: a
#: virtio disk says 1 whatever the host stores it on, and a loop device says 0 even when its
#: backing file is on a spinning disk.
CLASS_TEXT: dict[str, str] = {
    "hdd": "spinning disk",
    "ssd": "SSD (solid state)",
    "nvme": "NVMe SSD",
    "virtual": "virtual disk: the host decides its speed",
    "network": "network block device: the remote end and the network decide its speed",
    "loop": "loop device: its backing file (and the page cache) decide its speed",
    "ram": "RAM disk",
    "zram": "compressed RAM disk (zram)",
    "dm": "device-mapper volume",
    "md": "software RAID (md)",
    "optical": "optical drive",
    "unknown": "unknown (the kernel does not say)",
}

#: Short names, for what a dm or md device sits on.
_CLASS_SHORT = {"hdd": "HDD", "ssd": "SSD", "nvme": "NVMe", "virtual": "virtual disks"}

#: Drivers of paravirtual disks (``device/driver`` or an ancestor's): virtio, Xen, Hyper-V.
_VIRTUAL_DRIVERS = ("virtio_blk", "virtio_scsi", "vbd", "xen_blkfront", "hv_storvsc", "vmw_pvscsi")
#: Path components of paravirtual buses in the device's sysfs path.
_VIRTUAL_BUS = re.compile(r"/(virtio\d+|vbd-\d+|xen|vmbus|VMBUS:[^/]*)(/|$)")
#: Vendor or model strings of emulated or cloud disks (SCSI/ATA/NVMe as seen by the guest).
_VIRTUAL_IDENTITY = re.compile(
    r"^(QEMU|VMware|VBOX|Msft|Virtual|Google|Amazon Elastic Block Store|nvme_card-pd|"
    r"Xen|Red Hat|BHYVE|Parallels)",
    re.IGNORECASE,
)
#: NVMe-over-fabrics transports (``device/transport``): the disk is on the network.
_NETWORK_TRANSPORTS = ("tcp", "rdma", "fc")


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
    loop_backing_device: str | None = None
    """For loop devices, the device the backing file is on (live hosts only)."""
    loop_dio: bool | None = None
    """For loop devices, ``loop/dio``: without it the worker serves one request at a time."""
    mounts: tuple[str, ...] = ()
    """Mount points of filesystems on this device."""
    fstypes: tuple[str, ...] = ()
    """Filesystem types of those mounts."""
    swap: bool = False
    """Whether the device is active swap."""
    device_class: str = "unknown"
    """What the device is (see :data:`DEVICE_CLASSES`), from the transport, the driver and
    ``rotational`` together: a partition has its disk's class."""
    backing_class: str | None = None
    """For dm and md devices, the class of every disk they sit on, when all agree."""

    @property
    def media_class(self) -> str:
        """The class whose speed this device has: a dm or md device's disks', else its own."""
        if self.device_class in ("dm", "md") and self.backing_class:
            return self.backing_class
        return self.device_class

    @property
    def seeks(self) -> bool | None:
        """True when latency should be judged as a spinning disk's (class ``hdd``), False for
        any other known class, None when unknown. Unlike ``rotational`` this is False for a
        virtio disk, which the kernel marks rotational whatever the host stores it on."""
        media = self.media_class
        if media in ("unknown", "dm", "md"):
            return None if self.rotational is None or media == "unknown" else False
        return media == "hdd"

    @property
    def class_text(self) -> str:
        """The class in plain words, for the Device tab."""
        if self.device_class in ("dm", "md") and self.backing_class:
            what = "device-mapper" if self.device_class == "dm" else "software RAID"
            return f"{what} on {_CLASS_SHORT.get(self.backing_class, self.backing_class)}"
        return CLASS_TEXT.get(self.device_class, self.device_class)

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
        return hidden_by_default(self.name, self.kind)

    @property
    def in_use(self) -> bool:
        """Mounted, swap or held by another device."""
        return bool(self.mounts or self.swap or self.holders)

    @property
    def unattached_loop(self) -> bool:
        """A loop device with no backing file: no I/O, no queue worth reading."""
        return self.kind == "loop" and self.loop_backing_file is None and not self.size_bytes


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


NAMES = "surrogateescape"
"""How files of names and paths are decoded: bytes that are not UTF-8 kept, as ``os.fsdecode``."""


def _read_int(path: Path) -> int | None:
    text = read_attribute(path)
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


def classify(
    name: str,
    kind: str,
    sysdir: Path,
    rotational: bool | None,
    *,
    vendor: str | None = None,
    model: str | None = None,
) -> str:
    """The class of a whole disk (not a partition), one of :data:`CLASS_TEXT`.

    The kernel name and kind say loop, ram, zram, dm and md. Otherwise the driver and bus
    (``device/driver``, the resolved sysfs path: virtio, Xen, Hyper-V) or an emulated
    vendor/model string (QEMU, VMware, VBOX, Msft, cloud volumes) say virtual; an NVMe
    namespace is nvme (network when ``device/transport`` is tcp, rdma or fc); and only
    then does ``queue/rotational`` choose between hdd and ssd.
    """
    if kind in ("loop", "ram", "zram", "dm", "md"):
        return kind
    devdir = sysdir / "device"
    hardware = os.path.isdir(devdir)
    if hardware and _is_virtual_path(sysdir):
        return "virtual"
    if any(ident and _VIRTUAL_IDENTITY.match(ident.strip()) for ident in (vendor, model)):
        return "virtual"
    if kind == "nvme":
        transport = read_attribute(devdir / "transport") if hardware else None
        return "network" if transport in _NETWORK_TRANSPORTS else "nvme"
    if name.startswith(("nbd", "rbd")):
        return "network"
    if name.startswith("sr"):
        return "optical"
    return "unknown" if rotational is None else ("hdd" if rotational else "ssd")


def _is_virtual_path(sysdir: Path) -> bool:
    """Whether the disk hangs off a paravirtual bus or is driven by a paravirtual driver."""
    for link in (sysdir / "device" / "driver", sysdir / "device" / ".." / "driver"):
        try:
            if os.path.basename(os.readlink(link)) in _VIRTUAL_DRIVERS:
                return True
        except OSError:
            pass
    try:
        resolved = str(sysdir.resolve())
    except OSError:
        return False
    return bool(_VIRTUAL_BUS.search(resolved))


def _backing_class(
    name: str, classes: Mapping[str, str], slaves: Mapping[str, tuple[str, ...]]
) -> str | None:
    """The one class of every disk under a dm/md device (partitions count as their disk)."""
    seen: set[str] = set()
    found: set[str] = set()
    todo = list(slaves.get(name, ()))
    while todo:
        below = todo.pop()
        if below in seen:
            continue
        seen.add(below)
        cls = classes.get(below)
        if cls in ("dm", "md"):
            todo += slaves.get(below, ())
        elif cls is not None:
            found.add(cls)
    return found.pop() if len(found) == 1 else None


def parse_mountinfo(text: str) -> dict[tuple[int, int], list[tuple[str, str]]]:
    """Map ``(major, minor)`` to ``[(mount point, fstype)]`` from mountinfo text (read by
    :func:`~iotop_plus.sampling.topology.blockdev.mountinfo_entries`). Malformed lines are
    skipped."""
    out: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for entry in mountinfo_entries(text):
        out.setdefault((entry.major, entry.minor), []).append((entry.mountpoint, entry.fstype))
    return out


def parse_swaps(text: str) -> list[str]:
    """The ``Filename`` column of /proc/swaps (devices and swap files)."""
    names = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if (parts and parts[1:2] == ["partition"]) or parts:
            names.append(parts[0])
    return names


@dataclass(frozen=True)
class _Node:
    """One entry of ``/sys/class/block`` before it is described: its numbers, its sysfs
    directory, its :attr:`BlockDevice.kind` and, for a partition, its disk (None when unknown).
    """

    name: str
    major: int
    minor: int
    sysdir: Path
    kind: str
    parent: str | None


@dataclass(frozen=True)
class _Sources:
    """What every node is described against, read once per inventory: ``/sys/block`` (a
    partition's queue and device directories are its disk's), the mounts by (major, minor),
    the active swap devices, ``dm/name`` by kernel name, each disk's partitions in name order,
    and udev's identity properties by kernel name."""

    sys_block: Path
    mounts: Mapping[tuple[int, int], list[tuple[str, str]]]
    swap_devs: frozenset[str]
    dm_names: Mapping[str, str | None]
    parts_of: Mapping[str, list[str]]
    udev: Mapping[str, dict[str, str]]


def read_inventory(roots: Roots, use_udev: bool | None = None) -> Inventory:
    """Describe every block device under ``roots``.

    Args:
        roots: Where to read.
        use_udev: Ask udev for model/serial. Defaults to True only on the live roots, since
            udev's database describes the host, not a captured tree.
    """
    if use_udev is None:
        use_udev = roots.is_live
    nodes = _read_nodes(roots)
    mounts_text = read_attribute(roots.proc / "self" / "mountinfo", MAX_SOURCE_BYTES, NAMES) or ""
    swaps_text = read_attribute(roots.proc / "swaps", MAX_SOURCE_BYTES) or ""
    parts_of: dict[str, list[str]] = {}
    for node in nodes.values():
        if node.parent is not None:
            parts_of.setdefault(node.parent, []).append(node.name)
    dm_names = {name: read_attribute(node.sysdir / "dm" / "name") for name, node in nodes.items()}
    sources = _Sources(
        sys_block=roots.sys_block,
        mounts=parse_mountinfo(mounts_text),
        swap_devs=_swap_devices(parse_swaps(swaps_text), dm_names),
        dm_names=dm_names,
        parts_of=parts_of,
        udev=udev_identity(nodes) if use_udev else {},
    )
    devices = {name: _describe(node, sources) for name, node in nodes.items()}
    if roots.is_live:  # the backing file's path is this host's, not a captured tree's
        devices = _with_backing_devices(devices)
    return Inventory(_with_classes(devices))


def _with_backing_devices(devices: dict[str, BlockDevice]) -> dict[str, BlockDevice]:
    """Each loop device learns the device its backing file is on."""
    by_number = {(d.major, d.minor): name for name, d in devices.items()}
    for name, dev in devices.items():
        under = file_device(dev.loop_backing_file, by_number) if dev.loop_backing_file else None
        if under is not None and under != name:
            devices[name] = replace(dev, loop_backing_device=under)
    return devices


def _read_nodes(roots: Roots) -> dict[str, _Node]:
    """Every block device's numbers, kind and (for a partition) disk, by kernel name."""
    class_block = roots.sys_class_block
    sys_block = roots.sys_block
    names = _listdir(class_block) or _listdir(sys_block)
    nodes: dict[str, _Node] = {}
    for name in names:
        sysdir = class_block / name if (class_block / name).exists() else sys_block / name
        numbers = dev_numbers(read_attribute(sysdir / "dev") or "")
        if numbers is None:
            continue
        is_part = (sysdir / "partition").exists()
        parent: str | None = None
        if is_part:
            try:
                parent = sysdir.resolve().parent.name
            except OSError:
                parent = None
            if not parent or parent == "block":
                parent = _guess_parent(name, names)
        major, minor = numbers
        nodes[name] = _Node(name, major, minor, sysdir, _kind(name, is_part, sysdir), parent)
    return nodes


def _swap_devices(swap_paths: Iterable[str], dm_names: Mapping[str, str | None]) -> frozenset[str]:
    """The devices among the swap entries: /dev/NAME, /dev/mapper/DMNAME (a swap file is not a
    device)."""
    by_dm = {v: k for k, v in dm_names.items() if v}
    swap_devs: set[str] = set()
    for path in swap_paths:
        if path.startswith("/dev/mapper/"):
            found = by_dm.get(path.removeprefix("/dev/mapper/"))
            if found:
                swap_devs.add(found)
        elif path.startswith("/dev/"):
            swap_devs.add(path.removeprefix("/dev/"))
    return frozenset(swap_devs)


def _describe(node: _Node, sources: _Sources) -> BlockDevice:
    """One device as sysfs (and udev) describe it; its class before :func:`_with_classes`."""
    name, sysdir, parent_name, sys_block = node.name, node.sysdir, node.parent, sources.sys_block
    if node.kind == "loop" and not (sysdir / "loop").is_dir() and not _read_int(sysdir / "size"):
        # No backing file and no size: nothing more to read (a host may hold hundreds of free
        # loop nodes). Attaching one gives it a new diskseq, and the inventory is read again.
        return _unattached_loop(node)
    # Partitions have no queue/ of their own: their settings are the parent disk's.
    qdir = (sys_block / parent_name / "queue") if parent_name else (sysdir / "queue")
    rot = _read_int(qdir / "rotational")
    udev = sources.udev
    ident = udev.get(name) or (udev.get(parent_name, {}) if parent_name else {})
    devdir = (sys_block / parent_name / "device") if parent_name else (sysdir / "device")
    # Only hardware has a device/ directory: loop, dm, md, ram and zram devices would fail
    # six opens here, ~190 loop nodes on a typical container host, before the first frame.
    hardware = os.path.isdir(devdir)
    model = ident.get("ID_MODEL") or (read_attribute(devdir / "model") if hardware else None)
    vendor = ident.get("ID_VENDOR") or (read_attribute(devdir / "vendor") if hardware else None)
    # virtio-blk puts the serial beside the disk (vda/serial), not under device/.
    diskdir = (sys_block / parent_name) if parent_name else sysdir
    serial = ident.get("ID_SERIAL_SHORT") or (
        (read_attribute(devdir / "serial") or read_attribute(diskdir / "serial"))
        if hardware
        else None
    )
    wwid = ident.get("ID_WWN") or (
        (read_attribute(sysdir / "wwid") or read_attribute(devdir / "wwid")) if hardware else None
    )
    md_level = read_attribute(sysdir / "md" / "level") if node.kind == "md" else None
    mount_list = sources.mounts.get((node.major, node.minor), [])
    size = _read_int(sysdir / "size")
    return BlockDevice(
        name=name,
        major=node.major,
        minor=node.minor,
        kind=node.kind,
        parent=parent_name,
        partitions=tuple(sources.parts_of.get(name, ())),
        dm_name=sources.dm_names.get(name) or None,
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
            read_attribute(sysdir / "loop" / "backing_file", errors=NAMES)
            if node.kind == "loop"
            else None
        ),
        loop_dio=(
            _read_int(sysdir / "loop" / "dio") == 1
            if node.kind == "loop" and (sysdir / "loop").is_dir()
            else None
        ),
        mounts=tuple(m for m, _ in mount_list),
        fstypes=tuple(f for _, f in mount_list),
        swap=name in sources.swap_devs,
        device_class=(
            "unknown"
            if parent_name
            else classify(
                name,
                node.kind,
                sysdir,
                None if rot is None else bool(rot),
                vendor=vendor,
                model=model,
            )
        ),
    )


def _unattached_loop(node: _Node) -> BlockDevice:
    """A free loop node: its numbers and kind, size 0, nothing else known."""
    return BlockDevice(node.name, node.major, node.minor, "loop", device_class="loop")


def _with_classes(devices: dict[str, BlockDevice]) -> dict[str, BlockDevice]:
    """Partitions take their disk's class; dm and md devices learn what they sit on."""
    classes = {
        name: (devices[d.parent].device_class if d.parent in devices else "unknown")
        if d.parent
        else d.device_class
        for name, d in devices.items()
    }
    slaves = {name: d.slaves for name, d in devices.items()}
    out: dict[str, BlockDevice] = {}
    for name, dev in devices.items():
        backing = _backing_class(name, classes, slaves) if dev.kind in ("dm", "md") else None
        if classes[name] != dev.device_class or backing is not None:
            dev = replace(dev, device_class=classes[name], backing_class=backing)
        out[name] = dev
    return out


def _guess_parent(name: str, names: Iterable[str]) -> str | None:
    """Longest other device name that prefixes a partition's name (``nvme0n1p1``)."""
    best = None
    for other in names:
        if other != name and name.startswith(other) and (best is None or len(other) > len(best)):
            best = other
    return best


def hidden_by_default(name: str, kind: str | None = None) -> bool:
    """Loop, ram and zram devices (:data:`HIDDEN_KINDS`) are hidden unless all devices are
    shown: by ``kind`` when it is known, else by the kernel ``name`` (``loop3``)."""
    if kind is not None:
        return kind in HIDDEN_KINDS
    return bool(_HIDDEN_BY_DEFAULT.match(name))


def shown_by_default(
    name: str,
    device: BlockDevice | None,
    ever_used: bool,
    *,
    show_all: bool = False,
    partitions: bool = False,
    hide_virtual: bool = False,
) -> bool:
    """Whether a device is listed, iostat's way: whole devices that have done I/O since boot.

    The one rule of the headless commands (``select_devices``), ``serve`` and the TUI's table.

    Args:
        name: Kernel name.
        device: What the inventory knows of it; None when it is not described yet (a device
            that just appeared): then it is judged by its name.
        ever_used: Whether it has done any I/O.
        show_all: Every device, used or not, partitions included.
        partitions: Add partitions (of devices that have done I/O).
        hide_virtual: Also hide loop, ram and zram devices (the TUI's default).
    """
    if show_all:
        return True
    if device is not None and device.is_partition and not partitions:
        return False
    if hide_virtual and hidden_by_default(name, device.kind if device is not None else None):
        return False
    return ever_used
