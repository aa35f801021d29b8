"""The Device tab's health lines and the help's health paragraph, from the frame's health
part (the table's severity mark is :func:`~iotop_plus.tui.widgets.device_rows.severity_marks`).
Pure text: the widgets show it."""

from __future__ import annotations

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.health.gate import HealthPart
from iotop_plus.sampling.health.part import NOT_READ_YET
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.why.diagnosis import growth_text

HEALTH_HELP = (
    "[b]Health[/b] (Device tab; smartctl --json every 5 minutes at most, read-only, killed "
    "after 10 s; else sysfs): [b]verdict[/b] is the drive's own SMART overall-health result; "
    "[b]media errors[/b] are reads or writes the drive could not recover (NVMe media errors, "
    "ATA 187, SCSI uncorrected); [b]wear[/b] is the share of the rated write endurance used "
    "(NVMe percentage used; ATA from the wear attribute) and [b]spare[/b] the spare blocks "
    "left; [b]realloc[/b] and [b]pending[/b] are sectors remapped and waiting to be (ATA 5 "
    "and 197, SCSI grown defects); [b]log[/b] counts the drive's error-log entries. "
    "[i]Misleads:[/i] a PASSED verdict says little (drives fail while passing; falling "
    "figures say more); ATA attributes are vendor-defined and their raw values sometimes "
    "packed; wear may pass 100 % and the drive go on; a reading can be minutes old (its age is "
    "shown); smartctl on a sleeping disk is skipped (--nocheck=standby). Virtual, loop, RAM, "
    "dm and md devices have no drive to ask: the line says why.",
    "[b]I/O errors[/b]: requests the kernel failed on the device since iotop-plus started, "
    "drawn as chart marks with their kind (I/O, critical medium, critical space allocation, "
    "timeout, ...). Counted from the block_rq_error tracepoint while the latency tracer runs, "
    "else from the kernel log (/dev/kmsg, root). [i]Misleads:[/i] the kernel rate-limits its "
    "log lines, so without the tracer a burst counts fewer than happened; a filesystem's own "
    "errors (a full disk under a file) are not block errors unless the device fails the "
    "request (a loop device on a full filesystem does).",
)


def _figures(reading: DeviceHealth) -> str:
    parts = []
    if reading.passed is not None:
        parts.append("PASSED" if reading.passed else "FAILING")
    if reading.temperature_c is not None:
        temp = f"{reading.temperature_c} °C"
        if reading.temperature_warning_c:
            temp += f" (warn {reading.temperature_warning_c})"
        parts.append(temp)
    named = (
        ("wear", reading.percentage_used, " %"),
        ("spare", reading.available_spare, " %"),
        ("media errors", reading.media_errors, ""),
        ("realloc", reading.reallocated_sectors, ""),
        ("pending", reading.pending_sectors, ""),
        ("log", reading.error_log_entries, ""),
        ("unsafe off", reading.unsafe_shutdowns, ""),
        ("on", reading.power_on_hours, " h"),
    )
    parts += [f"{label} {value:,}{unit}" for label, value, unit in named if value is not None]
    if reading.critical_warning:
        parts.append(f"critical warning 0x{reading.critical_warning:02x}")
    if reading.device_state is not None:
        parts.append(f"state {reading.device_state}")
    return ", ".join(parts) or "no figures"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    return f"{seconds / 60:.0f} min ago"


def health_facts(name: str, frame: Frame | None) -> list[tuple[str, str]]:
    """(label, value) lines for the Device tab: the reading and the I/O errors."""
    health = frame.get(HealthPart) if frame is not None else None
    if health is None:
        return []
    reading = health.readings.get(name)
    facts: list[tuple[str, str]] = []
    if health.failed is not None:  # the last readings may be stale: none is shown
        facts.append(("health", f"failed: {health.failed}"))
    elif reading is None:
        facts.append(("health", NOT_READ_YET))
    elif reading.source == "none":
        facts.append(("health", f"none: {reading.reason}" if reading.reason else "none"))
    else:
        age = _age(health.age_s.get(name))
        facts.append(
            ("health", f"{_figures(reading)} ({reading.source}{', ' + age if age else ''})")
        )
        if reading.reason:
            facts.append(("health note", reading.reason))
        grown = health.grown.get(name)
        if grown:  # what the verdict's "device reports media errors" rests on
            facts.append(("health grew", f"{growth_text(grown)} since start"))
    if health.io_errors is not None:
        shown = health.errors_text(name)
        facts.append(("I/O errors", f"{shown} since start ({health.io_error_source})"))
    elif health.problem:
        facts.append(("I/O errors", health.problem.removeprefix("I/O errors: ")))
    return facts
