"""The queue settings of a block device: what each one is, where it lives, its valid values.

Facts (block/blk-sysfs.c, Linux 6.x):

* Values are parsed by ``kstrtoul`` in base 10; signs, decimals, ``0x`` and spaces are EINVAL.
* Partitions have no ``queue/`` of their own: their settings are the parent disk's.
* ``scheduler`` and ``nr_requests`` exist only on blk-mq queues.
* The kernel rounds and clamps silently, so every write must be read back.

The write side (:func:`validate_value`, :func:`write_setting`) is stricter than the kernel:
``kstrtoul`` would take a leading ``+`` and ``nomerges`` silently takes 3 as 1, but a value a
person did not mean is refused here before anything is written.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iotop_plus.devices.writers import Writer, not_live_reason, write_live_file
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.queue_settings import parse_scheduler
from iotop_plus.sampling.topology.blockdev import partition_parent
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded


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


#: ``queue_var_store`` refuses values above UINT_MAX with EINVAL.
UINT_MAX = 2**32 - 1

#: The kernel's MAX_SCHED_RQ (16 * BLKDEV_DEFAULT_RQ): the nr_requests limit with a scheduler.
MAX_SCHED_RQ = 2048

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
            maximum=UINT_MAX,
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
            maximum=UINT_MAX,
            blk_mq_only=True,
        ),
        QueueSetting(
            "max_sectors_kb",
            "max I/O size",
            "KiB",
            "Largest request the kernel builds; clamped to max_hw_sectors_kb.",
            minimum=4,
            maximum=UINT_MAX,
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
            maximum=2**63 - 1,
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

    @property
    def display_with_choices(self) -> str:
        """:attr:`display`, and for a setting with a list of values the others it could take:
        ``none (also: mq-deadline, kyber)``, never ``none of none mq-deadline``."""
        others = [c for c in self.choices if c != self.value]
        if self.setting.name != "scheduler" or not others:
            return self.display
        return f"{self.display} (also: {', '.join(others)})"


def queue_device(roots: Roots, device: str) -> str:
    """The device whose ``queue/`` directory serves ``device`` (a partition's parent)."""
    return partition_parent(roots.sys_class_block / device) or device


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
        raw: str | None = read_bounded(path, MAX_ATTRIBUTE_BYTES).strip()
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


# --- the write side --------------------------------------------------------------------------

#: The one-line error for a write without root.
NEEDS_ROOT = "needs root: queue settings are read-only for other users"

#: Digits a number may have: UINT_MAX and 2**63 have 10 and 19 (Python's int() stops at 4300).
MAX_DIGITS = 20

_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:!+-]*")
_DIGITS = re.compile(r"[0-9]+")


class SettingError(Exception):
    """A setting could not be changed; the message is one line in plain words."""

    def __init__(self, device: str, setting: str, message: str, kind: str = "failed") -> None:
        super().__init__(f"{device} {setting}: {message}")
        self.device = device
        """The device the user named."""
        self.setting = setting
        """The setting's sysfs name."""
        self.message = message
        """What went wrong, without the device and setting."""
        self.kind = kind
        """``invalid`` (refused before writing), ``permission`` (needs root), ``refused``
        (the kernel said EINVAL) or ``failed`` (anything else)."""


@dataclass(frozen=True)
class WriteResult:
    """One setting written and read back."""

    before: SettingValue
    """The setting as read just before the write."""
    after: SettingValue
    """The setting as read back just after the write."""
    requested: str
    """The value written, after validation (e.g. ``deadline`` becomes ``mq-deadline``)."""

    @property
    def old(self) -> str:
        """The value before the write."""
        return self.before.value or ""

    @property
    def effective(self) -> str:
        """The value the kernel kept, which may differ from :attr:`requested`."""
        return self.after.value or ""


def page_kib() -> int:
    """The page size in KiB: read-ahead is rounded down to whole pages."""
    try:
        return max(1, os.sysconf("SC_PAGE_SIZE") // 1024)
    except (ValueError, OSError):
        return 4


def check_device_name(roots: Roots, device: str) -> None:
    """Refuse names that are not a block device under ``roots``.

    Raises:
        SettingError: for a name with path characters or no such device.
    """
    if not _DEVICE_NAME.fullmatch(device):
        raise SettingError(device, "-", "not a block device name", "invalid")
    if not (roots.sys_class_block / device).exists() and not (roots.sys_block / device).exists():
        raise SettingError(device, "-", "no such block device", "invalid")


def _read_int(path: Path) -> int | None:
    try:
        return int(read_bounded(path, MAX_ATTRIBUTE_BYTES).strip())
    except (OSError, ValueError):
        return None


def hardware_queue_depth(roots: Roots, queue_dev: str) -> int | None:
    """The smallest tag depth over the device's hardware queues (``mq/*/nr_tags``)."""
    depths = []
    try:
        for hctx in (roots.sys_block / queue_dev / "mq").iterdir():
            depth = _read_int(hctx / "nr_tags")
            if depth is not None:
                depths.append(depth)
    except OSError:
        return None
    return min(depths) if depths else None


def valid_range(roots: Roots, current: SettingValue) -> str:
    """The values this device accepts for ``current``'s setting, in plain words."""
    name = current.setting.name
    qdir = roots.sys_block / current.queue_device / "queue"
    if name == "read_ahead_kb":
        return f"0 to {UINT_MAX} KiB, rounded down to whole {page_kib()} KiB pages"
    if name == "scheduler":
        return "one of " + ", ".join(current.choices) if current.choices else "none listed"
    if name == "nr_requests":
        scheduler, _ = parse_scheduler(_read_text(qdir / "scheduler") or "")
        if scheduler in (None, "none"):
            depth = hardware_queue_depth(roots, current.queue_device)
            limit = str(depth) if depth else "the hardware queue depth"
            return f"4 to {limit} with scheduler none (0-3 become 4)"
        return f"4 to {MAX_SCHED_RQ} with scheduler {scheduler} (0-3 become 4)"
    if name == "max_sectors_kb":
        hw = _read_int(qdir / "max_hw_sectors_kb")
        top = f"{hw} (max_hw_sectors_kb; larger values are clamped)" if hw else "max_hw_sectors_kb"
        return f"{page_kib()} to {top} KiB"
    if name == "wbt_lat_usec":
        return "-1 (the device default), 0 (off) or a target latency in µs"
    if current.setting.choices:
        return ", ".join(current.setting.choices[:-1]) + " or " + current.setting.choices[-1]
    low = current.setting.minimum if current.setting.minimum is not None else 0
    high = current.setting.maximum
    return f"{low} to {high}" if high is not None else f"at least {low}"


def _read_text(path: Path) -> str | None:
    # Bounded and non-blocking: a captured tree may hold a FIFO or /dev/zero here.
    try:
        return read_bounded(path, MAX_ATTRIBUTE_BYTES).strip()
    except OSError:
        return None


def _number_problem(text: str) -> str:
    if text == "":
        return "the value is empty"
    if text != text.strip() or any(c.isspace() for c in text):
        return f"{text!r} has spaces"
    if text[0] in "+-":
        return f"{text!r} has a sign"
    if text.lower().startswith("0x"):
        return f"{text!r} is not base 10"
    if any(c in ".,eE" for c in text):
        return f"{text!r} is not a whole number"
    return f"{text!r} is not a number"


def validate_value(roots: Roots, current: SettingValue, text: str) -> str:
    """Check ``text`` for ``current``'s setting before anything is written.

    Numbers follow the kernel's ``kstrtoul`` base-10 rules, minus the leading ``+`` it would
    take: digits only, no sign, no decimals, no ``0x``, no spaces; ``wbt_lat_usec`` also takes
    -1. A scheduler must be in the device's own list (``deadline`` means ``mq-deadline``).

    Returns:
        The value to write, normalised (``010`` becomes ``10``).

    Raises:
        SettingError: saying what is wrong and what is valid.
    """
    setting = current.setting
    if not current.present:
        raise SettingError(
            current.device, setting.name, current.reason or "not available", "invalid"
        )
    if setting.name == "scheduler":
        if text == "deadline" and "mq-deadline" in current.choices:
            return "mq-deadline"
        if text not in current.choices:
            raise SettingError(
                current.device,
                setting.name,
                f"{text!r} is not a scheduler of this device "
                f"(valid: {valid_range(roots, current)})",
                "invalid",
            )
        return text
    if setting.allow_negative_one and text == "-1":
        return text
    if not _DIGITS.fullmatch(text):
        raise SettingError(
            current.device,
            setting.name,
            f"{_number_problem(text)} (valid: {valid_range(roots, current)})",
            "invalid",
        )
    if len(text.lstrip("0")) > MAX_DIGITS:
        raise SettingError(
            current.device,
            setting.name,
            f"a {len(text)}-digit number is out of range (valid: {valid_range(roots, current)})",
            "invalid",
        )
    number = int(text.lstrip("0") or "0")
    low = setting.minimum
    if setting.name == "max_sectors_kb":
        low = page_kib()
    if (low is not None and number < low) or (
        setting.maximum is not None and number > setting.maximum
    ):
        raise SettingError(
            current.device,
            setting.name,
            f"{number} is out of range (valid: {valid_range(roots, current)})",
            "invalid",
        )
    if setting.choices and str(number) not in setting.choices:
        raise SettingError(
            current.device,
            setting.name,
            f"{number} is not valid (valid: {valid_range(roots, current)})",
            "invalid",
        )
    return str(number)


def errno_message(roots: Roots, current: SettingValue, err: OSError) -> str:
    """A failed write's errno in plain words, naming the valid range where that helps."""
    code = err.errno
    if code == errno.ELOOP:
        return "the setting file is a symbolic link: refused (writes never follow one)"
    if code == errno.EXDEV:
        return f"refused: {err.strerror}"
    if code == errno.EINVAL:
        return f"value not accepted by this device (valid: {valid_range(roots, current)})"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return NEEDS_ROOT
    if code in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
        return "the device or setting has gone away"
    if code == errno.EBUSY:
        return "the device is busy; try again"
    return f"write failed: {err.strerror or err}"


def effective_note(roots: Roots, result: WriteResult) -> str | None:
    """Why the kernel kept a value other than the one written, or None when they match."""
    return adjustment_note(
        roots,
        result.before.setting.name,
        result.after.queue_device,
        result.requested,
        result.effective,
    )


def adjustment_note(
    roots: Roots, name: str, queue_dev: str, requested: str, effective: str | None
) -> str | None:
    """Why the kernel keeps (or will keep) ``effective`` for a write of ``requested``."""
    if effective is None or requested == effective:
        return None
    if name == "read_ahead_kb":
        return f"rounded down to whole {page_kib()} KiB pages"
    if name == "max_sectors_kb":
        hw = _read_int(roots.sys_block / queue_dev / "queue" / "max_hw_sectors_kb")
        if hw is not None and effective == str(hw):
            return f"clamped to max_hw_sectors_kb ({hw})"
        return "adjusted by the kernel"
    if name == "nr_requests" and requested.isdigit() and int(requested) < 4:
        return "0-3 become 4"
    if name == "wbt_lat_usec" and requested == "-1":
        return "-1 restores the device default"
    return "adjusted by the kernel"


def raise_not_writable(current: SettingValue) -> None:
    """Raise the SettingError for a setting that cannot be written now.

    Raises:
        SettingError: ``needs root`` (kind ``permission``) or the kernel's reason.
    """
    reason = current.reason or "read-only"
    if "root" in reason:
        raise SettingError(current.device, current.setting.name, NEEDS_ROOT, "permission")
    raise SettingError(current.device, current.setting.name, reason, "failed")


def predict_effective(roots: Roots, current: SettingValue, value: str) -> str | None:
    """The value the kernel will keep for the validated ``value``, or None if it cannot tell.

    The kernel's rounding: read-ahead is rounded down to whole pages,
    ``nr_requests`` 0-3 become 4, ``max_sectors_kb`` is clamped to ``max_hw_sectors_kb``.
    """
    name = current.setting.name
    if name == "scheduler" or current.setting.choices:
        return value
    if not value.isdigit():
        return None  # wbt_lat_usec -1: the device's default, unknown here
    number = int(value)
    if name == "read_ahead_kb":
        page = page_kib()
        return str(number // page * page)
    if name == "nr_requests":
        return str(max(4, number))
    if name == "max_sectors_kb":
        hw = _read_int(roots.sys_block / current.queue_device / "queue" / "max_hw_sectors_kb")
        return str(min(number, hw)) if hw is not None else None
    return value


def write_setting(
    roots: Roots,
    device: str,
    name: str,
    text: str,
    *,
    is_root: bool | None = None,
    writer: Writer | None = None,
    before_write: Callable[[SettingValue, str], None] | None = None,
) -> WriteResult:
    """Validate ``text``, write it to ``device``'s setting, and read it back.

    Only ``queue/<name>`` of ``device`` (or of its parent disk, for a partition) is written,
    and the file is never created. Without a ``writer``, only the live /sys is written
    (:func:`write_live_file`); tests inject one to change settings in temporary trees.

    Args:
        before_write: Called with the setting and the validated value just before the
            write (the journal's intent); raising SettingError there stops the write.

    Raises:
        SettingError: for an unknown setting or device, a refused value, missing permission,
            a captured tree, or a failed write, in plain words.
    """
    if name not in SETTINGS:
        raise SettingError(
            device, name, f"unknown setting (known: {', '.join(SETTINGS)})", "invalid"
        )
    check_device_name(roots, device)
    before = read_setting(roots, device, name, is_root=is_root)
    value = validate_value(roots, before, text)
    if not before.writable:
        raise_not_writable(before)
    if writer is None:
        reason = not_live_reason(roots)
        if reason:
            raise SettingError(device, name, reason, "invalid")
        writer = write_live_file
    if before_write is not None:
        before_write(before, value)
    try:
        writer(before.path, value)
    except OSError as exc:
        kind = {errno.EINVAL: "refused", errno.EACCES: "permission", errno.EPERM: "permission"}
        raise SettingError(
            device, name, errno_message(roots, before, exc), kind.get(exc.errno or 0, "failed")
        ) from None
    after = read_setting(roots, device, name, is_root=is_root)
    return WriteResult(before, after, value)
