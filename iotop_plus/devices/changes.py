"""What one journaled setting change is, and what identifies the device or boot it was made on.

:class:`Change` is one write as the journal (:mod:`iotop_plus.devices.journal`) records it,
with the :class:`SideEffect` s the kernel made along with it. A change's intent carries the
device's identity (major:minor, ``diskseq``, loop backing file, serial, WWN) or, for a host
setting, the boot id, so that a later run can tell whether the name still means the same
device (:func:`same_device`) and the sysctl the same boot (:func:`same_boot`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from iotop_plus.devices.settings import SETTINGS
from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.delayacct import SYSCTL as DELAYACCT
from iotop_plus.sysfs import read_attribute

#: Actions in the journal: a user's change, its undo, a revert-all step, a failed set rolled
#: back, and a leftover of a dead run put back.
ACTIONS = ("set", "undo", "revert", "rollback", "restore")
#: Actions that put back the change named by ``undoes``: they close it.
UNDO_ACTIONS = ("undo", "revert", "rollback")
#: Identity fields of a device (and, for host settings, of the boot), journaled with intents.
IDENTITY = ("dev", "diskseq", "backing_file", "serial", "wwid", "boot_id")
#: The ``scope`` of a change to one device's queue, and of a change to the whole host.
DEVICE_SCOPE, HOST_SCOPE = "device", "host"
#: Host-wide settings that are journaled, undone and restored like queue settings.
HOST_SETTINGS = (DELAYACCT,)


@dataclass(frozen=True)
class SideEffect:
    """Another setting of the same queue that the kernel changed along with a write."""

    setting: str
    """The setting's sysfs name, e.g. ``nr_requests``."""
    old: str
    """Its value before the write."""
    effective: str
    """Its value after the write."""


@dataclass(frozen=True)
class Change:
    """One write to one setting, as the journal records it."""

    sequence: int
    """Order within this run, from 1."""
    time: float
    """Wall-clock time of the write (seconds since the epoch)."""
    action: str
    """``set``, ``undo``, ``revert``, ``rollback`` or ``restore`` (see :data:`ACTIONS`)."""
    device: str
    """The device the user named (may be a partition)."""
    queue_device: str
    """The device whose ``queue/`` was written."""
    setting: str
    """The setting's sysfs name."""
    old: str
    """The value read before the write."""
    new: str
    """The value written (validated and normalised)."""
    effective: str
    """The value read back after the write: what the kernel kept."""
    note: str | None = None
    """Why ``effective`` differs from ``new`` (rounded, clamped...), else None."""
    side_effects: tuple[SideEffect, ...] = ()
    """Other settings of the queue that moved with this write."""
    undoes: int | None = None
    """For undo, revert and rollback: the sequence number of the change put back."""
    run: str = ""
    """The run that made it (sequence numbers restart in every run)."""
    scope: str = DEVICE_SCOPE
    """``device`` (a queue setting) or ``host`` (a sysctl; ``device`` is then empty)."""
    boot_id: str | None = None
    """Host settings: the boot it was made in (the kernel resets sysctls at boot)."""
    boottime: float | None = None
    """Host settings: ``CLOCK_BOOTTIME`` of the write, in seconds (tasks' start times use it)."""

    @property
    def where(self) -> str:
        """``host`` for a host setting, else the device named."""
        return HOST_SCOPE if self.scope == HOST_SCOPE else self.device

    @property
    def summary(self) -> str:
        """One line for people: ``loop3 read-ahead: 128 -> 4 (asked 7: rounded ...)``."""
        label = SETTINGS[self.setting].label if self.setting in SETTINGS else self.setting
        text = f"{self.where} {label}: {self.old} -> {self.effective}"
        if self.effective != self.new:
            text += f" (asked {self.new}: {self.note or 'adjusted by the kernel'})"
        for effect in self.side_effects:
            text += f"; {effect.setting} {effect.old} -> {effect.effective}"
        if self.action != "set":
            text += f" [{self.action}]"
        return text

    def to_json(self) -> dict[str, object]:
        """The journal line for this change."""
        host = self.scope == HOST_SCOPE
        doc: dict[str, object] = {
            "time": datetime.fromtimestamp(self.time, timezone.utc).isoformat(),
            "run": self.run,
            "sequence": self.sequence,
            "action": self.action,
            "scope": self.scope,
            "device": None if host else self.device,
            "queue_device": None if host else self.queue_device,
            "setting": self.setting,
            "old": self.old,
            "new": self.new,
            "effective": self.effective,
            "note": self.note,
            "side_effects": [
                {"setting": e.setting, "old": e.old, "effective": e.effective}
                for e in self.side_effects
            ],
            "undoes": self.undoes,
        }
        if host:
            doc["boot_id"] = self.boot_id
            doc["boottime_s"] = self.boottime
        return doc


def boot_id(roots: Roots) -> str | None:
    """This boot's id (``/proc/sys/kernel/random/boot_id``), or None where unreadable."""
    return read_attribute(roots.proc / "sys" / "kernel" / "random" / "boot_id") or None


def same_boot(recorded: Mapping[str, Any], now: str | None) -> str:
    """``same``, ``stale`` (set in another boot: the kernel reset it) or ``unknown``."""
    was = recorded.get("boot_id")
    if not was or not now:
        return "unknown: the boot id is not known, so whether the kernel reset it is not either"
    if was != now:
        return "stale: set in an earlier boot (the kernel reset it at boot)"
    return "same"


def device_identity(roots: Roots, queue_device: str) -> dict[str, str | None]:
    """What tells this disk from the next one given its name: major:minor, ``diskseq``
    (Linux >= 5.15, grows with every attach), the loop backing file, serial and WWN."""
    base = roots.sys_block / queue_device
    return {
        "dev": read_attribute(base / "dev") or None,
        "diskseq": read_attribute(base / "diskseq") or None,
        "backing_file": read_attribute(base / "loop" / "backing_file") or None,
        "serial": read_attribute(base / "device" / "serial") or None,
        "wwid": read_attribute(base / "wwid")
        or None
        or read_attribute(base / "device" / "wwid")
        or None,
    }


def same_device(recorded: Mapping[str, Any], now: Mapping[str, str | None]) -> str:
    """``same``, ``stale`` (another device has the name now) or ``unknown``, with why."""
    if not now.get("dev"):
        return "stale: the device is gone"
    if recorded.get("dev") and recorded["dev"] != now["dev"]:
        return f"stale: it is {now['dev']} now, was {recorded['dev']}"
    for key, what in (
        ("diskseq", "diskseq"),
        ("backing_file", "backing file"),
        ("wwid", "WWN"),
        ("serial", "serial"),
    ):
        if recorded.get(key):
            if recorded[key] == now.get(key):
                return "same"
            return f"stale: another device ({what} {now.get(key)}, was {recorded[key]})"
    return "unknown: nothing identifies the device (no diskseq, backing file, serial or WWN)"


def write_order(setting: str) -> int:
    """Sort key: settings whose write resets others go first.

    Switching the scheduler resets ``nr_requests`` (and bfq turns off write-back throttling);
    writing ``max_sectors_kb`` resets ``read_ahead_kb`` (seen on Linux 6.18).
    """
    return {"scheduler": 0, "max_sectors_kb": 1}.get(setting, 2)


#: Settings a write of the key resets, when the value changes (seen on Linux 6.18): a new
#: scheduler gets its own ``nr_requests``; ``max_sectors_kb`` recomputes read-ahead.
RESETS: dict[str, tuple[str, ...]] = {
    "scheduler": ("nr_requests",),
    "max_sectors_kb": ("read_ahead_kb",),
}


def predicted_side_effects(setting: str, old: str | None, new: str) -> tuple[str, ...]:
    """The settings a write of ``new`` over ``old`` will move besides ``setting``."""
    if old == new:
        return ()
    effects = RESETS.get(setting, ())
    if setting == "scheduler" and new == "bfq":
        effects += ("wbt_lat_usec",)  # bfq turns write-back throttling off
    return effects


__all__ = [
    "ACTIONS",
    "DEVICE_SCOPE",
    "HOST_SCOPE",
    "HOST_SETTINGS",
    "IDENTITY",
    "RESETS",
    "UNDO_ACTIONS",
    "Change",
    "SideEffect",
    "boot_id",
    "device_identity",
    "predicted_side_effects",
    "same_boot",
    "same_device",
    "write_order",
]
