"""The custom ``prometheus_client`` collector of ``serve``, and its exposition.

Families come in two parts, each a tuple of functions ``(view) -> metric families``:

* :data:`FRAME_FAMILIES` change with every frame (disk counters, pressure, health);
* :data:`STATIC_FAMILIES` change rarely (identity, queue settings, setting changes, probes).

Adding a family (latency histograms, cgroups) is one function appended to a tuple. The
rendered text of each part is cached: the frame part per frame and format, the static part
per :attr:`ExportView.static_version` and format; a scrape between two frames costs nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
    StateSetMetricFamily,
)
from prometheus_client.exposition import choose_encoder

from iotop_plus import __version__
from iotop_plus.export.cgroups import cgroup_families
from iotop_plus.export.counters import DISK_COUNTERS
from iotop_plus.export.health import health_export
from iotop_plus.export.latency import latency_families
from iotop_plus.export.part_metrics import part_families
from iotop_plus.export.queue import QUEUE_GAUGES
from iotop_plus.export.view import ExportView
from iotop_plus.export.why import cgroup_limit_families, diagnosis_families, memory_families
from iotop_plus.sampling.disks.diskstats import IN_FLIGHT
from iotop_plus.text import printable

PREFIX = "iotop_plus_"
PRESSURE_STALLED = PREFIX + "pressure_stalled_seconds"
"""The PSI full counter's name (the fleet view's queries read it)."""
OPENMETRICS_EOF = b"# EOF\n"

Families = Callable[[ExportView], Iterable[Metric]]


def disk_families(view: ExportView) -> Iterator[Metric]:
    """node_exporter's disk counters, and ``disk_io_now``."""
    frame = view.frame
    if frame is None:
        return
    counters = frame.sample.counters
    values = view.disk_values
    devices = view.devices
    for spec in DISK_COUNTERS:
        family = CounterMetricFamily(
            PREFIX + spec.name, spec.help, labels=("device",), unit=spec.unit
        )
        i, scale = spec.index, spec.scale
        for name in devices:
            if counters[name].n_fields >= spec.needs:
                v = values[name][i]
                family.add_metric((name,), v * scale if scale != 1 else v)
        yield family
    io_now = GaugeMetricFamily(PREFIX + "disk_io_now", "I/Os in flight now.", labels=("device",))
    for name in devices:
        io_now.add_metric((name,), counters[name].values[IN_FLIGHT])
    yield io_now


def pressure_families(view: ExportView) -> Iterator[Metric]:
    """Host-wide PSI as counters of seconds: ``some`` waiting, ``full`` stalled."""
    pressure = view.frame.pressure if view.frame is not None else None
    if pressure is None or not pressure.resources:
        return
    waiting = CounterMetricFamily(
        PREFIX + "pressure_waiting_seconds",
        "Seconds in which at least one task waited for the resource (PSI some total).",
        labels=("resource",),
        unit="seconds",
    )
    stalled = CounterMetricFamily(
        PRESSURE_STALLED,
        "Seconds in which every non-idle task stalled on the resource at once (PSI full total).",
        labels=("resource",),
        unit="seconds",
    )
    for resource, lines in pressure.resources.items():
        if lines.some is not None:
            waiting.add_metric((resource,), lines.some.total_us / 1e6)
        if lines.full is not None:
            stalled.add_metric((resource,), lines.full.total_us / 1e6)
    yield waiting
    yield stalled


def latency_export(view: ExportView) -> Iterator[Metric]:
    """Latency histograms and queue time of the exported devices (``serve --latency``)."""
    yield from latency_families(view.latency, frozenset(view.devices))


def cgroup_export(view: ExportView) -> Iterator[Metric]:
    """Per-cgroup I/O counters and io.pressure (unless ``--no-cgroups``)."""
    yield from cgroup_families(view.cgroups)


def health_families(view: ExportView) -> Iterator[Metric]:
    """When the last frame was read, and how many could not be."""
    if view.frame is not None:
        yield GaugeMetricFamily(
            PREFIX + "last_frame_timestamp_seconds",
            "Wall-clock time the latest frame was read (seconds since the epoch).",
            value=view.frame.wall_time,
            unit="seconds",
        )
    yield CounterMetricFamily(
        PREFIX + "frame_errors",
        "Frames that could not be read, or held lines of /proc/diskstats that did not parse.",
        value=view.frame_errors,
    )


def identity_families(view: ExportView) -> Iterator[Metric]:
    """``disk_info`` and ``build_info``."""
    yield InfoMetricFamily(
        PREFIX + "build", "The iotop-plus version serving these metrics.", {"version": __version__}
    )
    frame = view.frame
    if frame is None:
        return
    info = InfoMetricFamily(
        PREFIX + "disk",
        "Identity of each exported device.",
        labels=("device", "major", "minor", "model", "serial", "wwn", "rotational", "dm_name"),
    )
    counters = frame.sample.counters
    for name in view.devices:
        dev = frame.inventory.get(name)
        c = counters[name]
        rotational = "" if dev is None or dev.rotational is None else str(int(dev.rotational))
        info.add_metric(
            (
                name,
                str(c.major),
                str(c.minor),
                (dev.model if dev else None) or "",
                (dev.serial if dev else None) or "",
                (dev.wwid if dev else None) or "",
                rotational,
                (dev.dm_name if dev else None) or "",
            ),
            {},
        )
    yield info


def queue_families(view: ExportView) -> Iterator[Metric]:
    """Queue settings: the scheduler as a StateSet, the numeric ones as gauges."""
    queues = view.queues
    scheduler = StateSetMetricFamily(
        PREFIX + "disk_scheduler",
        "The I/O scheduler of the queue: one series per scheduler it offers, 1 for the active.",
        labels=("device",),
    )
    for name, q in queues.items():
        if q.schedulers:
            scheduler.add_metric((name,), {s: s == q.scheduler for s in q.schedulers})
    yield scheduler
    for gauge in QUEUE_GAUGES:
        family = GaugeMetricFamily(
            PREFIX + gauge.name, gauge.help, labels=("device",), unit=gauge.unit
        )
        for name, q in queues.items():
            value = q.values.get(gauge.attribute)
            if value is not None:
                family.add_metric((name,), value * gauge.scale)
        yield family


def event_families(view: ExportView) -> Iterator[Metric]:
    """Setting changes from the journal, and the last probe per (target, preset)."""
    changes = CounterMetricFamily(
        PREFIX + "setting_changes",
        "Queue setting writes applied by iotop-plus (from the settings journal).",
        labels=("device", "setting"),
    )
    for (device, setting), count in sorted(view.changes.items()):
        changes.add_metric((device, setting), count)
    yield changes
    labels = ("target", "preset")
    iops = GaugeMetricFamily(
        PREFIX + "probe_iops", "Last probe: read plus write IOPS.", labels=labels
    )
    bandwidth = GaugeMetricFamily(
        PREFIX + "probe_bandwidth_bytes",
        "Last probe: read plus write bandwidth, bytes per second.",
        labels=labels,
        unit="bytes",
    )
    p99 = GaugeMetricFamily(
        PREFIX + "probe_latency_p99_seconds",
        "Last probe: completion latency p99 (the worse of read and write).",
        labels=labels,
        unit="seconds",
    )
    stamp = GaugeMetricFamily(
        PREFIX + "probe_timestamp_seconds",
        "When the last probe finished (seconds since the epoch).",
        labels=labels,
        unit="seconds",
    )
    for key, figures in sorted(view.probes.items()):
        iops.add_metric(key, figures.iops)
        bandwidth.add_metric(key, figures.bandwidth_bytes)
        if figures.latency_p99_seconds is not None:
            p99.add_metric(key, figures.latency_p99_seconds)
        stamp.add_metric(key, figures.timestamp)
    yield from (iops, bandwidth, p99, stamp)


FRAME_FAMILIES: tuple[Families, ...] = (
    disk_families,
    pressure_families,
    latency_export,
    cgroup_export,
    health_families,
    memory_families,
    cgroup_limit_families,
    diagnosis_families,
    health_export,
    part_families,
)
"""Families that change every frame (latency histograms and cgroups go here)."""
STATIC_FAMILIES: tuple[Families, ...] = (identity_families, queue_families, event_families)
"""Families that change rarely."""


class _Part:
    """A collector over some family functions (so each part renders on its own registry)."""

    def __init__(self, view: Callable[[], ExportView], families: tuple[Families, ...]) -> None:
        self._view = view
        self._families = families

    def collect(self) -> Iterator[Metric]:
        view = self._view()
        for build in self._families:
            yield from map(printable_labels, build(view))


EAGER_FOR_S = 150.0
"""A format scraped within this long is rendered right after each frame (on the sampler
thread), so the next scrape of it is a cache hit: 2.5 times Prometheus' default 1 min scrape
interval, so a format nobody asks for any more stops costing CPU soon."""


class FrameCollector:
    """The custom collector: every family of the latest view. Register it on a private
    :class:`CollectorRegistry` (no process metrics leak in); :meth:`render` is the fast path
    the HTTP server and the textfile writer use, :meth:`prerender` fills its cache ahead."""

    def __init__(self, view: Callable[[], ExportView]) -> None:
        self.view = view
        self._frame_part = _registry(_Part(view, FRAME_FAMILIES))
        self._static_part = _registry(_Part(view, STATIC_FAMILIES))
        self._cache: dict[tuple[str, str], tuple[Any, bytes]] = {}
        self._lock = threading.Lock()
        encoder, classic = choose_encoder("")  # 0.0.4: what a scrape without Accept gets
        self._asked: dict[str, tuple[Any, float]] = {classic: (encoder, time.monotonic())}
        """Content type -> (encoder, when last scraped): the formats :meth:`prerender` makes."""

    def collect(self) -> Iterator[Metric]:
        """Every family, from one view."""
        view = self.view()
        for build in (*FRAME_FAMILIES, *STATIC_FAMILIES):
            yield from map(printable_labels, build(view))

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """(body, content type) for an ``Accept`` header: OpenMetrics when asked, else 0.0.4."""
        encoder, content_type = choose_encoder(accept or "")
        with self._lock:  # two scrapers at once render once
            self._asked[content_type] = (encoder, time.monotonic())
            return self._render(encoder, content_type), content_type

    def prerender(self, _view: object = None) -> None:
        """Render every format scraped in the last :data:`EAGER_FOR_S` (0.0.4 until the first
        scrape) for the latest view: called on the sampler thread after each frame."""
        now = time.monotonic()
        with self._lock:
            for content_type, (encoder, at) in list(self._asked.items()):
                if now - at > EAGER_FOR_S:
                    del self._asked[content_type]  # nobody scrapes it any more
                else:
                    self._render(encoder, content_type)

    def _render(self, encoder: Any, content_type: str) -> bytes:
        view = self.view()
        frame_key = view.frame.seq if view.frame is not None else -1
        head = self._cached("frame", content_type, (frame_key, view.frame_errors), encoder)
        tail = self._cached("static", content_type, view.static_version, encoder)
        if head.endswith(OPENMETRICS_EOF):
            head = head[: -len(OPENMETRICS_EOF)]
        return head + tail

    def _cached(self, part: str, content_type: str, key: Any, encoder: Any) -> bytes:
        hit = self._cache.get((part, content_type))
        if hit is not None and hit[0] == key:
            return hit[1]
        registry = self._frame_part if part == "frame" else self._static_part
        body: bytes = encoder(registry)
        self._cache[(part, content_type)] = (key, body)
        return body


def printable_labels(metric: Metric) -> Metric:
    """``metric`` with every label value passed through :func:`printable`: a cgroup, mount or
    process name may hold any byte, and the exposition must be valid UTF-8 with no control
    character."""
    for i, sample in enumerate(metric.samples):
        labels = sample.labels
        if not all(v.isprintable() for v in labels.values()):
            clean = {k: printable(v) for k, v in labels.items()}
            metric.samples[i] = sample._replace(labels=clean)
    return metric


def _registry(collector: object) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)  # type: ignore[arg-type]
    return registry
