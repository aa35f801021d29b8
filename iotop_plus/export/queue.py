"""Queue settings of each device, as ``serve`` exports them
(node_exporter lacks them: node_exporter#1601).

The settings come with each frame (its queue part, :mod:`iotop_plus.sampling.disks.queue_settings`,
re-read when the devices change, a setting change is journaled, and every
:data:`QUEUE_REFRESH_S`), never per scrape; this module says how each one is exported.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "QUEUE_GAUGES",
    "QueueGauge",
]


@dataclass(frozen=True)
class QueueGauge:
    """One numeric queue setting and how it is exported."""

    name: str
    """Metric name without the prefix, e.g. ``disk_read_ahead_bytes``."""
    attribute: str
    """The file under ``queue/``."""
    scale: float
    """Multiplier to the exported unit (1024 for KiB, 1e-6 for µs)."""
    help: str
    """HELP text."""
    unit: str = ""
    """OpenMetrics unit (the name's suffix), or empty."""


QUEUE_GAUGES: tuple[QueueGauge, ...] = (
    QueueGauge(
        "disk_read_ahead_bytes",
        "read_ahead_kb",
        1024,
        "Read-ahead of the queue (queue/read_ahead_kb x 1024).",
        "bytes",
    ),
    QueueGauge(
        "disk_nr_requests", "nr_requests", 1, "Requests the scheduler may hold per hardware queue."
    ),
    QueueGauge(
        "disk_max_sectors_bytes",
        "max_sectors_kb",
        1024,
        "Largest request the kernel builds (queue/max_sectors_kb x 1024).",
        "bytes",
    ),
    QueueGauge(
        "disk_nomerges", "nomerges", 1, "0 merges requests, 1 only simple merges, 2 never merges."
    ),
    QueueGauge(
        "disk_rq_affinity",
        "rq_affinity",
        1,
        "0 completes anywhere, 1 on the submitting CPU's group, 2 on that CPU.",
    ),
    QueueGauge(
        "disk_wbt_lat_seconds",
        "wbt_lat_usec",
        1e-6,
        "Write-back throttling target latency (queue/wbt_lat_usec / 1e6); 0 when disabled.",
        "seconds",
    ),
)
