"""The queue settings of a block device: what each one is, where it lives, its valid values.

Facts (block/blk-sysfs.c, Linux 6.x; see REFERENCE.md):

* Values are parsed by ``kstrtoul`` in base 10; signs, decimals, ``0x`` and spaces are EINVAL.
* Partitions have no ``queue/`` of their own: their settings are the parent disk's.
* ``scheduler`` and ``nr_requests`` exist only on blk-mq queues.
* The kernel rounds and clamps silently, so every write must be read back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from iotop_plus.roots import Roots


@dataclass(frozen=True)
class QueueSetting:
    """What one tunable is and which values it takes."""

    name: str
    """The sysfs attribute under ``queue/``, e.g. ``read_ahead_kb``."""
    label: str
    """Short human label."""
    unit: str
    """Unit of the value (``KiB``, ``requests``...), or empty."""
    description: str
    """One line on what it does and when to change it."""
    minimum: int | None = None
    """Smallest accepted integer, if numeric."""
    maximum: int | None = None
    """Largest accepted integer, if numeric (None: the device decides)."""
    choices: tuple[str, ...] = ()
    """Fixed valid values, if any (the scheduler's come from the device)."""
    allow_negative_one: bool = False
    """Whether -1 is accepted as "restore the default" (wbt_lat_usec)."""
    blk_mq_only: bool = False
    """Present only on blk-mq queues."""


SETTINGS: dict[str, QueueSetting] = {
    s.name: s
    for s in (
        QueueSetting(
            "read_ahead_kb",
            "read-ahead",
            "KiB",
            "How far the kernel reads ahead of sequential buffered reads. "
            "Rounded down to whole pages.",
            minimum=0,
            maximum=2**32 - 1,
        ),
        QueueSetting(
            "scheduler",
            "I/O scheduler",
            "",
            "Request ordering: none suits fast NVMe, mq-deadline caps latency, "
            "bfq shares fairly between processes.",
            blk_mq_only=True,
        ),
        QueueSetting(
            "nr_requests",
            "queue depth",
            "requests",
            "Requests the scheduler may hold per hardware queue (0-3 become 4).",
            minimum=0,
            blk_mq_only=True,
        ),
        QueueSetting(
            "max_sectors_kb",
            "max I/O size",
            "KiB",
            "Largest request the kernel builds; clamped to max_hw_sectors_kb.",
            minimum=4,
        ),
        QueueSetting(
            "nomerges",
            "merging",
            "",
            "0 merges requests, 1 only simple merges, 2 never merges.",
            minimum=0,
            maximum=2,
            choices=("0", "1", "2"),
        ),
        QueueSetting(
            "rq_affinity",
            "completion CPU",
            "",
            "0 completes anywhere, 1 on the submitting CPU's group, 2 on that CPU.",
            minimum=0,
            maximum=2,
            choices=("0", "1", "2"),
        ),
        QueueSetting(
            "wbt_lat_usec",
            "writeback throttling",
            "µs",
            "Target read latency for write-back throttling; 0 disables it, "
            "-1 restores the default.",
            minimum=0,
            allow_negative_one=True,
        ),
    )
}


@dataclass(frozen=True)
class SettingValue:
    """The current value of one setting on one device, as read from sysfs."""

    device: str
    """The device asked about (may be a partition)."""
    queue_device: str
    """The device whose ``queue/`` holds the setting (the parent disk for a partition)."""
    setting: QueueSetting
    """What the setting is."""
    present: bool
    """Whether this device has the setting at all."""
    raw: str | None
    """The file's content, stripped; None when absent or unreadable."""
    value: str | None
    """The current value (for ``scheduler`` the bracketed one)."""
    choices: tuple[str, ...]
    """Valid values, where finite (the scheduler's list comes from the device)."""
    writable: bool
    """Whether we could write it now (root and a writable file)."""
    reason: str | None
    """Why it is absent or read-only, in plain words; None when writable."""
    path: Path
    """The sysfs file."""

    @property
    def display(self) -> str:
        """The value with its unit, and read-ahead in 512-byte sectors as blockdev shows it."""
        if self.value is None:
            return "n/a"
        if self.setting.name == "read_ahead_kb" and self.value.isdigit():
            return f"{self.value} KiB ({int(self.value) * 2} sectors)"
        unit = f" {self.setting.unit}" if self.setting.unit else ""
        return f"{self.value}{unit}"


def queue_device(roots: Roots, device: str) -> str:
    """The device whose ``queue/`` directory serves ``device`` (a partition's parent)."""
    cls = roots.sys_class_block / device
    if (cls / "partition").exists():
        try:
            return cls.resolve().parent.name
        except OSError:
            return device
    return device


def parse_scheduler(raw: str) -> tuple[str | None, tuple[str, ...]]:
    """Split ``none [mq-deadline] kyber`` into (``mq-deadline``, all choices)."""
    current = None
    choices = []
    for word in raw.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            current = word
        choices.append(word)
    return current, tuple(choices)


def read_setting(
    roots: Roots, device: str, name: str, *, is_root: bool | None = None
) -> SettingValue:
    """Read one setting of ``device``. Never raises for a missing device or file."""

    setting = SETTINGS[name]
    qdev = queue_device(roots, device)
    path = roots.sys_block / qdev / "queue" / name
    if is_root is None:
        is_root = os.geteuid() == 0
    try:
        raw: str | None = path.read_text().strip()
    except FileNotFoundError:
        absent = (
            "not available on this device (it is not a blk-mq queue)"
            if setting.blk_mq_only
            else "not available on this device"
        )
        return SettingValue(device, qdev, setting, False, None, None, (), False, absent, path)
    except OSError as exc:
        return SettingValue(
            device, qdev, setting, True, None, None, (), False, f"cannot read: {exc.strerror}", path
        )
    value: str | None = raw
    choices = setting.choices
    if name == "scheduler" and raw is not None:
        value, choices = parse_scheduler(raw)
    reason = None
    writable = True
    if not is_root:
        writable, reason = False, "read-only: changing queue settings needs root"
    elif not os.access(path, os.W_OK):
        writable, reason = False, "read-only: the kernel does not allow writing this file"
    return SettingValue(device, qdev, setting, True, raw, value, choices, writable, reason, path)


def read_settings(
    roots: Roots, device: str, *, is_root: bool | None = None
) -> tuple[SettingValue, ...]:
    """Every known setting of ``device``, in the order of :data:`SETTINGS`."""
    return tuple(read_setting(roots, device, n, is_root=is_root) for n in SETTINGS)
