"""The devices' actual writes, as iotop's "Actual DISK WRITE": bytes a second written to the
whole disks whose bytes reach hardware, beside what the processes wrote.

The processes' total counts dirtying (written later, or never), a loop worker's writes to its
backing file and a reaped child's I/O; a device stack counts the same bytes at each level.
So the sum is over whole disks only: not partitions (their disk counts them), and not loop,
dm, md, zram, ram or nbd devices (their bytes are counted again on the disk below, are
memory, or are the network's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame

NOT_HARDWARE = ("part", "loop", "dm", "md", "zram", "ram")
"""Device kinds whose writes are not summed."""


@dataclass(frozen=True)
class DiskWrites:
    """The actual writes of one interval."""

    write_bps: float
    """Bytes a second written to :attr:`devices`."""
    devices: tuple[str, ...]
    """The disks summed, in kernel order."""

    def names(self, shown: int = 3) -> str:
        """The disks summed, for people: ``vda, sdb`` (``+N`` past ``shown``)."""
        more = len(self.devices) - shown
        return ", ".join(self.devices[:shown]) + (f" +{more}" if more > 0 else "")


def reaches_hardware(name: str, kind: str | None) -> bool:
    """Whether a device's writes are bytes that reach a disk (see the module's rule)."""
    if kind is not None and kind in NOT_HARDWARE:
        return False
    return not name.startswith(("nbd", "loop", "zram", "ram", "dm-", "md"))


def disk_writes(frame: Frame) -> DiskWrites | None:
    """The actual writes over ``frame``'s interval; None before there are rates or when no
    whole disk is known."""
    names: list[str] = []
    total = 0.0
    for name, rates in frame.rates.items():
        dev = frame.inventory.get(name)
        if rates is None or dev is None or not reaches_hardware(name, dev.kind):
            continue
        names.append(name)
        total += rates.wkb_s * 1024
    return DiskWrites(total, tuple(names)) if names else None
