"""The "why" metrics of ``serve``: dirty and writeback memory, cgroup I/O limits, and each
device's diagnosis (the verdict line's causes), all from the latest frame.

Names: ``iotop_plus_memory_dirty_bytes``, ``..._writeback_bytes``,
``..._dirty_threshold_bytes``, ``..._dirty_background_threshold_bytes``;
``iotop_plus_cgroup_io_limit{cgroup,device,kind}``; ``iotop_plus_disk_diagnosis{device,cause}``
(1 while the cause holds; each frame judged by the sampler with the frames before it, as
the TUI and ``snapshot`` judge it: :mod:`iotop_plus.why.verdicts`). No per-process
series.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from iotop_plus.sampling.memory.dirty import MemoryPart

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
    memory = view.frame.get(MemoryPart) if view.frame is not None else None
    if memory is None:
        return
    for name, attr, text in _MEMORY:
        value = getattr(memory, attr)
        if value is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}memory_{name}_bytes", text, value=value * 1024, unit="bytes"
            )


def cgroup_limit_families(view: ExportView) -> Iterator[Metric]:
    """The cgroup I/O limits in force (v2 ``io.max``, v1 ``blkio.throttle``), one series per
    cgroup, device and kind (``rbps``/``wbps`` in bytes/s, ``riops``/``wiops`` in I/Os/s);
    only while the frames carry cgroups (``serve --cgroup-depth``)."""
    from iotop_plus.sampling.cgroups.limits import device_limits
    from iotop_plus.sampling.cgroups.v1_limits import LIMIT_KEYS

    part = view.frame.cgroups if view.frame is not None else None
    if part is None:
        return
    family = GaugeMetricFamily(
        PREFIX + "cgroup_io_limit",
        "An I/O limit in force for a cgroup on a device: rbps/wbps bytes per second, "
        "riops/wiops I/Os per second (io.max or blkio.throttle.*_device).",
        labels=("cgroup", "device", "kind"),
    )
    for limit in device_limits(part.sample):
        for kind in LIMIT_KEYS:
            value = limit.limits.get(kind)
            if value is not None:
                family.add_metric((limit.cgroup, limit.device, kind), value)
    yield family


def diagnosis_families(view: ExportView) -> Iterator[Metric]:
    """``iotop_plus_disk_diagnosis{device,cause}``: 1 for each cause that holds for an
    exported device in the latest frame (``none`` when none does); causes that do not hold
    have no series. The verdicts are the frame's own, judged by the sampler
    (:class:`~iotop_plus.export.view.ExportSampler`) with the frames before it."""
    from iotop_plus.why.diagnosis import CAUSES, Diagnosis

    frame = view.frame
    if frame is None:
        return
    family = GaugeMetricFamily(
        PREFIX + "disk_diagnosis",
        f"1 while the cause holds for the device ({', '.join(CAUSES)}; none: no clear "
        "cause), from the verdict line.",
        labels=("device", "cause"),
    )
    verdicts = frame.verdicts or {}
    for name in view.devices:
        verdict = verdicts.get(name)
        if frame.rates.get(name) is None or not isinstance(verdict, Diagnosis):
            continue
        for cause in verdict.held or ("none",):
            family.add_metric((name, cause), 1)
    yield family
