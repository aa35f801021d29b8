"""Device health metrics of ``serve``, from the latest frame's health part.

Names: ``iotop_plus_disk_health_*`` in the words of ``snapshot --health``'s
JSON, with smartctl_exporter's where it has one (``power_on_seconds`` in base units for
``power_on_hours``), and ``iotop_plus_disk_io_errors_total`` (failed requests since serve
started, while something counts them). A figure the device does not give has no series.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)

from iotop_plus.sampling.health.gate import HealthPart

if TYPE_CHECKING:
    from iotop_plus.export.view import ExportView

PREFIX = "iotop_plus_disk_"

#: (metric suffix, DeviceHealth attribute, scale, help), in the JSON's order.
HEALTH_GAUGES: tuple[tuple[str, str, float, str], ...] = (
    ("health_passed", "passed", 1, "The drive's overall SMART verdict: 1 passed, 0 failing."),
    (
        "health_media_errors",
        "media_errors",
        1,
        "Unrecovered media and data-integrity errors the drive reports (NVMe media errors, "
        "ATA 187, SCSI uncorrected errors).",
    ),
    (
        "health_percentage_used",
        "percentage_used",
        1,
        "Share of the rated endurance used, percent (may pass 100).",
    ),
    ("health_available_spare", "available_spare", 1, "Spare blocks left, percent (NVMe)."),
    ("health_temperature_celsius", "temperature_c", 1, "The drive's temperature, Celsius."),
    ("health_critical_warning", "critical_warning", 1, "NVMe critical warning bits (0: none)."),
    (
        "health_reallocated_sectors",
        "reallocated_sectors",
        1,
        "Sectors remapped to spares (ATA 5, SCSI grown defects).",
    ),
    (
        "health_pending_sectors",
        "pending_sectors",
        1,
        "Sectors waiting to be remapped (ATA 197).",
    ),
    ("health_power_on_seconds", "power_on_hours", 3600, "Time powered on (whole hours)."),
    (
        "health_unsafe_shutdowns",
        "unsafe_shutdowns",
        1,
        "Power losses without a clean shutdown.",
    ),
)


def health_export(view: ExportView) -> Iterator[Metric]:
    """Health figures and I/O errors of the exported whole devices (none without health)."""
    health = view.frame.get(HealthPart) if view.frame is not None else None
    if health is None:
        return
    names = [n for n in view.devices if n in health.readings]
    info = InfoMetricFamily(
        PREFIX + "health",
        "Where each device's health comes from (smartctl, sysfs, none) and why figures are "
        "missing.",
        labels=("device", "source", "reason"),
    )
    for name in names:
        reading = health.readings[name]
        info.add_metric((name, reading.source, reading.reason or ""), {})
    yield info
    for suffix, attr, scale, text in HEALTH_GAUGES:
        unit = "celsius" if suffix.endswith("_celsius") else ""
        unit = "seconds" if suffix.endswith("_seconds") else unit
        family = GaugeMetricFamily(PREFIX + suffix, text, labels=("device",), unit=unit)
        for name in names:
            value = getattr(health.readings[name], attr)
            if value is not None:
                family.add_metric((name,), float(value) * scale)
        yield family
    age = GaugeMetricFamily(
        PREFIX + "health_age_seconds",
        "How old the health reading was at the latest frame (read at most every 5 minutes).",
        labels=("device",),
        unit="seconds",
    )
    for name in names:
        seconds = health.age_s.get(name)
        if seconds is not None:
            age.add_metric((name,), seconds)
    yield age
    if health.io_errors is not None:
        errors = CounterMetricFamily(
            PREFIX + "io_errors",
            "Failed block requests since serve started (block_rq_error while the tracer runs, "
            "else the kernel log, which the kernel rate-limits).",
            labels=("device",),
        )
        for name in view.devices:
            errors.add_metric((name,), health.io_errors.get(name, 0))
        yield errors
