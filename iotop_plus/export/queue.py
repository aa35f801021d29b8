"""Queue settings of each device, as ``serve`` exports them (what node_exporter lacks, #1601).

Read from ``<sys>/block/DEV/queue/`` on the sampler thread, at a modest rate (see
:data:`QUEUE_REFRESH_S`) and whenever the set of devices changes, never per scrape.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from iotop_plus.devices.settings import parse_scheduler
from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import MAX_ATTRIBUTE_BYTES, read_bounded

QUEUE_REFRESH_S = 30.0
"""How often queue settings are re-read when no setting change was journaled."""


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


@dataclass(frozen=True)
class QueueSettings:
    """The settings of one device's queue that could be read."""

    scheduler: str | None
    """The active scheduler, or None (no blk-mq queue, or unreadable)."""
    schedulers: tuple[str, ...]
    """Every scheduler the queue offers."""
    values: dict[str, float]
    """Numeric settings by attribute name, already scaled to the exported unit."""


def read_queue(roots: Roots, device: str) -> QueueSettings:
    """The queue settings of ``device``; absent or unreadable ones are left out."""
    queue = roots.sys_block / device / "queue"
    values: dict[str, float] = {}
    for gauge in QUEUE_GAUGES:
        try:
            text = read_bounded(queue / gauge.attribute, MAX_ATTRIBUTE_BYTES).strip()
            values[gauge.attribute] = int(text) * gauge.scale
        except (OSError, ValueError):
            continue
    try:
        current, choices = parse_scheduler(read_bounded(queue / "scheduler", MAX_ATTRIBUTE_BYTES))
    except OSError:
        current, choices = None, ()
    return QueueSettings(current, choices, values)


def read_queues(roots: Roots, devices: Iterable[str]) -> dict[str, QueueSettings]:
    """:func:`read_queue` for each of ``devices`` (whole devices: partitions share the disk's)."""
    return {name: read_queue(roots, name) for name in devices}
