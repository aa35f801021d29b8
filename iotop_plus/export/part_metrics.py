"""The registered frame parts' metrics (:meth:`~iotop_plus.sampling.frame.part.FramePart.metrics`)
as Prometheus families: a part gives plain :class:`~iotop_plus.sampling.frame.part.Metric` samples,
so the sampling layer imports no exporter; samples of one name form one family. Label values
go through the one ``printable`` with every other family's (the collector's)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from iotop_plus.export.view import ExportView
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.part import Metric as PartMetric

_KINDS = ("gauge", "counter", "histogram")


def part_families(view: ExportView) -> Iterator[Metric]:
    """Every registered part's metrics in the view's frame."""
    frame = view.frame
    if frame is None or not frame.parts:
        return
    for part in registry.parts():
        value = frame.parts.get(part.key)
        if value is not None:
            yield from families_of(part.metrics(value))


def families_of(samples: Iterable[PartMetric]) -> Iterator[Metric]:
    """``samples`` grouped by name into families (the first sample of a name sets its kind,
    help and label names; a later one that differs in them is left out)."""
    families: dict[str, tuple[PartMetric, tuple[str, ...], Metric]] = {}
    for sample in samples:
        if sample.kind not in _KINDS:
            continue
        names = tuple(sorted(sample.labels))
        got = families.get(sample.name)
        if got is None:
            got = (sample, names, _family(sample, names))
            families[sample.name] = got
        first, label_names, family = got
        if first.kind != sample.kind or label_names != names:
            continue
        _add(family, sample, [sample.labels[n] for n in names])
    for _, _, family in families.values():
        yield family


def _family(sample: PartMetric, labels: tuple[str, ...]) -> Metric:
    if sample.kind == "gauge":
        return GaugeMetricFamily(sample.name, sample.help, labels=list(labels))
    if sample.kind == "counter":
        return CounterMetricFamily(sample.name, sample.help, labels=list(labels))
    return HistogramMetricFamily(sample.name, sample.help, labels=list(labels))


def _add(family: Metric, sample: PartMetric, labels: list[str]) -> None:
    value = sample.value
    if isinstance(family, HistogramMetricFamily):
        if not isinstance(value, Mapping):
            return
        total = value.get("sum", 0.0)
        buckets = sorted(
            ((bound, float(count)) for bound, count in value.items() if bound != "sum"),
            key=lambda b: _bound(b[0]),
        )
        if not buckets or buckets[-1][0] != "+Inf":
            return  # a histogram without its +Inf bucket is not one
        family.add_metric(labels, buckets, float(total))
    elif isinstance(value, int | float):
        family.add_metric(labels, float(value))  # type: ignore[attr-defined]


def _bound(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.inf
