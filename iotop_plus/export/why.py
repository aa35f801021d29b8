"""The "why" metrics of ``serve``: dirty and writeback memory, cgroup I/O limits, and each
device's diagnosis (the verdict line's causes), all from the latest frame.

Names (the rulings): ``iotop_plus_memory_dirty_bytes``, ``..._writeback_bytes``,
``..._dirty_threshold_bytes``, ``..._dirty_background_threshold_bytes``;
``iotop_plus_cgroup_io_limit{cgroup,device,kind}``; ``iotop_plus_disk_diagnosis{device,cause}``
(1 while the cause holds). No per-process series.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from iotop_plus.export.view import ExportView

PREFIX = "iotop_plus_"

_MEMORY = (
    ("dirty", "dirty_kB", "Dirty page cache waiting to be written (/proc/meminfo Dirty)."),
    ("writeback", "writeback_kB", "Memory being written back now (/proc/meminfo Writeback)."),
    (
        "dirty_threshold",
        "dirty_threshold_kB",
        "Dirty memory at which writers are throttled (/proc/vmstat nr_dirty_threshold).",
    ),
    (
        "dirty_background_threshold",
        "dirty_background_threshold_kB",
        "Dirty memory at which the flusher starts writing back "
        "(/proc/vmstat nr_dirty_background_threshold).",
    ),
)


def memory_families(view: ExportView) -> Iterator[Metric]:
    """Dirty, writeback and the two thresholds, in bytes (absent where not read)."""
    memory = view.frame.memory if view.frame is not None else None
    if memory is None:
        return
    for name, attr, text in _MEMORY:
        value = getattr(memory, attr)
        if value is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}memory_{name}_bytes", text, value=value * 1024, unit="bytes"
            )
