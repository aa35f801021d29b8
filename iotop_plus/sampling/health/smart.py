"""Device health, read-only: ``smartctl --json`` where it can see the drive, else what sysfs
says, else why there is nothing to say.

Accepted input: the JSON document ``smartctl --json --nocheck=standby -a /dev/X`` prints
(smartmontools >= 7.0; SATA/ATA ``ata_smart_attributes``, SCSI ``scsi_error_counter_log``
and ``scsi_grown_defect_list``, NVMe ``nvme_smart_health_information_log``) and the sysfs
files ``device/hwmon*/temp1_input`` (NVMe, millidegrees), ``device/ioerr_cnt`` and
``device/iodone_cnt`` (SCSI, hex or decimal) and ``device/state``. Nothing here writes to a
device or starts a self-test: ``-a`` only reads the identity, the attributes and the logs.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from iotop_plus.programs import (
    CANCELLED,
    EXITED,
    OUTPUT_CAP,
    TOO_MUCH,
    lookup_program,
    run_contained,
)
from iotop_plus.roots import Roots
from iotop_plus.sysfs import read_attribute

READ_TIMEOUT_S = 10.0
"""How long smartctl may take for one device before it is killed."""
INSTALL_HINT = "apt-get install smartmontools"
"""What gets smartctl onto a Debian or Ubuntu host."""
TIMED_OUT = "health read timed out"
"""The reason of a device whose smartctl gave no answer in time (then killed)."""
MAX_OUTPUT_BYTES = OUTPUT_CAP
"""smartctl's JSON for one device is a few tens of kB; more is not smartctl (and is not
read: the helper's cap)."""

#: smartctl's exit status bits (``man smartctl``, "EXIT STATUS"), lowest first.
EXIT_BITS: tuple[str, ...] = (
    # smartctl 7.3 also exits 1 for "Unable to detect device type" (seen on virtio_blk)
    "command line did not parse, or the device type is unknown",
    "device open failed, gave no identity, or is in a low-power mode",
    "a SMART or other ATA command failed, or a checksum error",
    "SMART status: DISK FAILING",
    "pre-fail attributes at or below threshold",
    "usage or pre-fail attributes were below threshold in the past",
    "the device error log has errors",
    "the self-test log has errors",
)

#: Why a kind of device has no drive health, by inventory kind or ``device/driver``.
NO_HEALTH: dict[str, str] = {
    "loop": "a file-backed device: see the health of the disk under its backing file",
    "ram": "a RAM disk: no drive behind it",
    "zram": "a compressed RAM disk: no drive behind it",
    "brd": "a RAM disk: no drive behind it",
    "dm": "device-mapper: see the health of the devices it sits on",
    "md": "software RAID: see the health of its member disks",
    "nbd": "a network block device: the drive is on the server",
    "rbd": "a Ceph RBD image: the drives are on the Ceph cluster",
    "virtio_blk": "a virtual disk: the host's drives and their SMART are not visible here",
    "xen_blkfront": "a virtual disk: the host's drives and their SMART are not visible here",
    "vbd": "a virtual disk: the host's drives and their SMART are not visible here",
}
_SKIP_SMARTCTL = ("loop", "ram", "zram", "brd", "dm", "md", "nbd", "rbd")


@dataclass(frozen=True)
class DeviceHealth:
    """One reading of one device's health; absent figures are None."""

    source: str
    """``smartctl``, ``sysfs`` or ``none``."""
    reason: str | None = None
    """Why figures are missing (names the driver, e.g. ``virtio_blk: ...``), or None."""
    passed: bool | None = None
    """The drive's own overall verdict (SMART overall-health); None when not given."""
    media_errors: int | None = None
    """Unrecovered media and data-integrity errors (NVMe media errors, ATA 187, SCSI
    uncorrected read/write/verify errors)."""
    percentage_used: int | None = None
    """Share of the rated endurance used, % (NVMe; ATA from the wear attribute)."""
    available_spare: int | None = None
    """Spare blocks left, % (NVMe)."""
    temperature_c: int | None = None
    """Current temperature, °C."""
    critical_warning: int | None = None
    """NVMe critical warning bits (0: none)."""
    reallocated_sectors: int | None = None
    """Sectors remapped to spares (ATA 5, SCSI grown defects)."""
    pending_sectors: int | None = None
    """Sectors waiting to be remapped (ATA 197)."""
    power_on_hours: int | None = None
    """Hours powered on."""
    unsafe_shutdowns: int | None = None
    """Power lost without a clean shutdown (NVMe; ATA 174/192 where named so)."""
    error_log_entries: int | None = None
    """Entries in the drive's error log (NVMe, ATA summary count)."""
    available_spare_threshold: int | None = None
    """The spare level below which the drive warns, %."""
    temperature_warning_c: int | None = None
    """The drive's warning temperature, °C, where it says."""
    temperature_critical_c: int | None = None
    """The drive's critical (trip) temperature, °C, where it says."""
    exit_status: int | None = None
    """smartctl's exit status."""
    exit_notes: tuple[str, ...] = ()
    """smartctl's exit status bits in words."""
    device_state: str | None = None
    """SCSI ``device/state`` (``running``, ``offline``, ...)."""
    ioerr_cnt: int | None = None
    """SCSI ``device/ioerr_cnt``: commands the midlayer saw fail since the disk appeared."""
    iodone_cnt: int | None = None
    """SCSI ``device/iodone_cnt``: commands completed since the disk appeared."""
    read_wall: float = 0.0
    """When it was read (seconds since the epoch)."""
    read_monotonic: float = 0.0
    """When it was read (monotonic clock): the frame's age of the reading comes from it."""

    @property
    def worn(self) -> bool:
        """Wear past 90 % of the rated endurance."""
        return self.percentage_used is not None and self.percentage_used > 90


def decode_exit_status(status: int) -> tuple[str, ...]:
    """smartctl's exit status bits in words (lowest bit first)."""
    return tuple(text for bit, text in enumerate(EXIT_BITS) if status & (1 << bit))


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _get(doc: Mapping[str, Any], *path: str) -> Any:
    node: Any = doc
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _attributes(doc: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    table = _get(doc, "ata_smart_attributes", "table")
    out: dict[int, Mapping[str, Any]] = {}
    if isinstance(table, list):
        for row in table:
            if isinstance(row, Mapping) and isinstance(row.get("id"), int):
                out[row["id"]] = row
    return out


def _raw(attrs: Mapping[int, Mapping[str, Any]], *ids: int) -> int | None:
    for i in ids:
        if i in attrs:
            return _int(_get(attrs[i], "raw", "value"))
    return None


#: ATA attributes whose normalized value is the endurance left, % (100 new, 0 worn out).
_WEAR_ATTRS = (177, 233, 231, 202, 169)
_WEAR_NAMES = (
    "Wear_Leveling_Count",
    "Media_Wearout_Indicator",
    "SSD_Life_Left",
    "Percent_Lifetime_Remain",
    "Remaining_Lifetime_Perc",
)


def _ata_wear(doc: Mapping[str, Any], attrs: Mapping[int, Mapping[str, Any]]) -> int | None:
    pages = _get(doc, "ata_device_statistics", "pages")
    if isinstance(pages, list):  # smartctl >= 7.2 with -x: the standard endurance indicator
        for page in pages:
            for row in page.get("table", ()) if isinstance(page, Mapping) else ():
                if isinstance(row, Mapping) and "Percentage Used" in str(row.get("name")):
                    return _int(row.get("value"))
    for i in _WEAR_ATTRS:
        row = attrs.get(i)
        if row is not None and row.get("name") in _WEAR_NAMES:
            value = _int(row.get("value"))
            return None if value is None else max(0, 100 - value)
    return None


def _ata_unsafe(attrs: Mapping[int, Mapping[str, Any]]) -> int | None:
    for row in attrs.values():
        name = str(row.get("name", ""))
        if "Unsafe_Shutdown" in name or "Unexpect_Power_Loss" in name:
            return _int(_get(row, "raw", "value"))
    return None


def _scsi_uncorrected(doc: Mapping[str, Any]) -> int | None:
    log = doc.get("scsi_error_counter_log")
    if not isinstance(log, Mapping):
        return None
    counts = [_int(_get(log, op, "total_uncorrected_errors")) for op in ("read", "write", "verify")]
    found = [c for c in counts if c is not None]
    return sum(found) if found else None


def _messages(doc: Mapping[str, Any]) -> list[str]:
    found = _get(doc, "smartctl", "messages")
    if not isinstance(found, list):
        return []
    return [str(m.get("string")) for m in found if isinstance(m, Mapping) and m.get("string")]


def parse_smartctl(doc: Mapping[str, Any], driver: str | None = None) -> DeviceHealth:
    """The ruled figures from one ``smartctl --json`` document (SATA/ATA, SCSI or NVMe).

    ``driver`` (``device/driver``) names why a device shows nothing, e.g. ``virtio_blk``.
    Raises ``ValueError`` when the document is not smartctl's (no ``smartctl`` object).
    """
    if not isinstance(doc.get("smartctl"), Mapping) and not isinstance(doc.get("device"), Mapping):
        raise ValueError("not smartctl JSON: no 'smartctl' or 'device' object")
    status = _int(_get(doc, "smartctl", "exit_status")) or 0
    notes = decode_exit_status(status)
    nvme = doc.get("nvme_smart_health_information_log")
    nvme = nvme if isinstance(nvme, Mapping) else {}
    attrs = _attributes(doc)
    passed = _get(doc, "smart_status", "passed")
    temperature = _int(_get(doc, "temperature", "current"))
    if temperature is None:
        temperature = _int(nvme.get("temperature"))
    wear = _int(nvme.get("percentage_used"))
    if wear is None:
        wear = _int(doc.get("scsi_percentage_used_endurance_indicator"))
    if wear is None:
        wear = _ata_wear(doc, attrs)
    errlog = _int(nvme.get("num_err_log_entries"))
    if errlog is None:
        errlog = _int(_get(doc, "ata_smart_error_log", "extended", "count"))
    if errlog is None:
        errlog = _int(_get(doc, "ata_smart_error_log", "summary", "count"))
    realloc = _raw(attrs, 5)
    if realloc is None:
        realloc = _int(doc.get("scsi_grown_defect_list"))
    media = _int(nvme.get("media_errors"))
    if media is None:
        media = _raw(attrs, 187)
    if media is None:
        media = _scsi_uncorrected(doc)
    hours = _int(_get(doc, "power_on_time", "hours"))
    health = DeviceHealth(
        source="smartctl",
        passed=passed if isinstance(passed, bool) else None,
        media_errors=media,
        percentage_used=wear,
        available_spare=_int(nvme.get("available_spare")),
        temperature_c=temperature,
        critical_warning=_int(nvme.get("critical_warning")),
        reallocated_sectors=realloc,
        pending_sectors=_raw(attrs, 197),
        power_on_hours=hours if hours is not None else _int(nvme.get("power_on_hours")),
        unsafe_shutdowns=_int(nvme.get("unsafe_shutdowns")) if nvme else _ata_unsafe(attrs),
        error_log_entries=errlog,
        available_spare_threshold=_int(nvme.get("available_spare_threshold")),
        temperature_warning_c=_int(_get(doc, "nvme_composite_temperature_threshold", "warning")),
        temperature_critical_c=_int(_get(doc, "nvme_composite_temperature_threshold", "critical"))
        or _int(_get(doc, "temperature", "drive_trip")),
        exit_status=status,
        exit_notes=notes,
    )
    if status & 0b11:  # nothing was read: say why, naming the driver
        said = "; ".join(_messages(doc)) or (notes[0] if notes else "smartctl failed")
        reason = _with_driver(driver, f"smartctl: {said}")
        return DeviceHealth(source="none", reason=reason, exit_status=status, exit_notes=notes)
    return health


def _with_driver(driver: str | None, text: str) -> str:
    if driver is None:
        return text
    why = NO_HEALTH.get(driver)
    return f"{driver}: {why} ({text})" if why else f"{driver}: {text}"


def device_driver(roots: Roots, name: str) -> str | None:
    """The kernel driver of ``name`` (``device/driver``'s name, e.g. ``virtio_blk``, ``sd``)."""
    try:
        return os.path.basename(os.readlink(roots.sys_block / name / "device" / "driver"))
    except OSError:
        return None


def no_health_reason(kind: str, driver: str | None) -> str | None:
    """Why a device of this inventory ``kind`` or ``driver`` has no drive health, once and
    without running anything; None when smartctl may well answer."""
    for key in (kind, driver):
        if key in _SKIP_SMARTCTL:
            return f"{key}: {NO_HEALTH[key]}"
    return None


def _counter(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def sysfs_health(roots: Roots, name: str, reason: str | None = None) -> DeviceHealth:
    """What sysfs says without smartctl: NVMe hwmon temperature, SCSI error counters and
    state; source ``none`` when it says nothing."""
    device = roots.sys_block / name / "device"
    temp = warn = crit = None
    for hwmon in sorted(device.glob("hwmon*")):
        milli = _counter(read_attribute(hwmon / "temp1_input"))
        if milli is not None:
            temp = round(milli / 1000)
            warn_m = _counter(read_attribute(hwmon / "temp1_max"))
            crit_m = _counter(read_attribute(hwmon / "temp1_crit"))
            warn = round(warn_m / 1000) if warn_m else None
            crit = round(crit_m / 1000) if crit_m else None
            break
    health = DeviceHealth(
        source="sysfs",
        reason=reason,
        temperature_c=temp,
        temperature_warning_c=warn,
        temperature_critical_c=crit,
        device_state=read_attribute(device / "state"),
        ioerr_cnt=_counter(read_attribute(device / "ioerr_cnt")),
        iodone_cnt=_counter(read_attribute(device / "iodone_cnt")),
    )
    said = (health.temperature_c, health.device_state, health.ioerr_cnt, health.iodone_cnt)
    if all(v is None for v in said):
        return replace(health, source="none")
    return health


def run_smartctl(
    name: str, timeout: float = READ_TIMEOUT_S, cancel: threading.Event | None = None
) -> tuple[Mapping[str, Any] | None, str | None]:
    """Run ``smartctl --json --nocheck=standby -a /dev/NAME`` (found through the one program
    lookup, run contained: :func:`~iotop_plus.programs.run_contained`) and return its
    document, or None and one line saying why not.

    A smartctl that does not answer within ``timeout`` is killed with everything it started:
    :data:`TIMED_OUT`; so is one still running when ``cancel`` is set (the app quits), and one
    printing more than :data:`MAX_OUTPUT_BYTES`. What it leaves running when it exits is
    killed too.
    """
    found = lookup_program("smartctl")
    if found.path is None:
        return None, found.missing(INSTALL_HINT)
    argv = [found.path, "--json", "--nocheck=standby", "-a", f"/dev/{name}"]
    try:
        run = run_contained(argv, timeout=timeout, cancel=cancel)
    except OSError as exc:
        return None, f"cannot run smartctl: {exc.strerror or exc}"
    if run.ended == CANCELLED:
        return None, "health read stopped"
    if run.ended != EXITED and run.ended != TOO_MUCH:
        return None, f"{TIMED_OUT} ({run.problem()})"
    if run.ended == TOO_MUCH:
        return None, run.problem()
    out = run.out
    try:
        doc = json.loads(out)
    except ValueError:
        first = (out.decode("utf-8", "replace").strip().splitlines() or ["nothing"])[0]
        left = f"; {run.problem()}" if run.left_behind else ""
        return None, f"smartctl printed no JSON (exit {run.returncode}): {first[:120]}{left}"
    if not isinstance(doc, Mapping):
        return None, "smartctl printed JSON that is not an object"
    return doc, None


def read_health(
    roots: Roots,
    name: str,
    kind: str,
    *,
    timeout: float = READ_TIMEOUT_S,
    use_smartctl: bool = True,
    cancel: threading.Event | None = None,
) -> DeviceHealth:
    """One reading of ``name``'s health: smartctl, else sysfs, else why none (stamped now)."""
    now_wall, now_mono = time.time(), time.monotonic()
    driver = device_driver(roots, name)
    skip = no_health_reason(kind, driver)
    if skip is not None:
        found = sysfs_health(roots, name, skip)
    elif not use_smartctl:
        found = sysfs_health(roots, name, "smartctl is not run on a captured tree")
    else:
        doc, why = run_smartctl(name, timeout, cancel)
        if doc is not None:
            try:
                found = parse_smartctl(doc, driver)
            except ValueError as exc:
                doc, why = None, str(exc)
        if doc is None:
            if why is not None and why.startswith(TIMED_OUT):
                found = DeviceHealth(source="none", reason=why)
            else:
                found = sysfs_health(roots, name, _with_driver(driver, why or "no reading"))
        elif found.source == "none":
            sysfs = sysfs_health(roots, name, found.reason)
            found = replace(sysfs, exit_status=found.exit_status, exit_notes=found.exit_notes)
    return replace(found, read_wall=now_wall, read_monotonic=now_mono)
