"""Query rounds: every (host, device) ranked by what matters now, and one device's last hour.

Every figure is computed by PromQL on the server (:mod:`.queries`), so a query round costs the
same few requests for one host or a thousand. A host is the ``instance`` label.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

from iotop_plus.export.fleet.client import PrometheusClient, PrometheusError
from iotop_plus.export.fleet.queries import (
    DEFAULT_WINDOW,
    DIAGNOSIS_QUERY,
    DISK_SERIES,
    FLEET_QUERIES,
    HISTORY_QUERIES,
    PER_INSTANCE,
    selector,
)


@dataclass(frozen=True)
class FleetRow:
    """One device of one host, as of the last query round."""

    instance: str
    """The host (the ``instance`` label)."""
    device: str
    """Kernel name of the device."""
    rank: int = 0
    """1 for the worst (host, device) of the round, by :attr:`severity`; 0 when not ranked."""
    iops: float | None = None
    bytes_s: float | None = None
    await_ms: float | None = None
    p99_ms: float | None = None
    """Where latency histograms are exported; None otherwise."""
    util_pct: float | None = None
    aqu_sz: float | None = None
    psi_full_pct: float | None = None
    """The host's I/O pressure (full), percent of wall time."""
    diagnosis: str = ""
    """The causes of the device's verdict that hold (``throttled, cpu``; ``none``), from
    ``iotop_plus_disk_diagnosis``; empty where the host exports none."""

    @property
    def severity(self) -> tuple[float, float, float]:
        """What matters now, worst first when sorted descending: latency (p99 where exported,
        else await), then %util, then I/O pressure."""
        latency = self.p99_ms if self.p99_ms is not None else self.await_ms
        return (latency or 0.0, self.util_pct or 0.0, self.psi_full_pct or 0.0)


@dataclass(frozen=True)
class FleetRound:
    """One round of queries."""

    rows: tuple[FleetRow, ...] = ()
    """Every (host, device) seen, worst first."""
    queried_at: float = 0.0
    """Wall-clock time the round started."""
    elapsed_s: float = 0.0
    """How long the round took."""
    error: str | None = None
    """Why the round failed (unreachable...), or a note such as "no data yet"."""
    hosts: frozenset[str] = field(default_factory=frozenset)
    """Every instance seen."""


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def diagnoses(
    client: PrometheusClient, wall: float, deadline: float
) -> dict[tuple[str, str], list[str]]:
    """The causes that hold per (instance, device), held ones before ``none``.

    Raises:
        PrometheusError: the query failed.
    """
    causes: dict[tuple[str, str], list[str]] = {}
    for labels, _value in client.query(DIAGNOSIS_QUERY, at=wall, deadline=deadline):
        device, cause = labels.get("device"), labels.get("cause")
        if device is not None and cause is not None:
            causes.setdefault((labels.get("instance", ""), device), []).append(cause)
    for found in causes.values():
        found.sort(key=lambda c: (c == "none", c))
    return causes


def fleet_round(client: PrometheusClient, window: str = DEFAULT_WINDOW) -> FleetRound:
    """Run every :data:`FLEET_QUERIES` once; never raises (a failure is ``error``)."""
    started, wall = time.monotonic(), time.time()
    deadline = client.deadline()
    figures: dict[tuple[str, str], dict[str, float | None]] = {}
    psi: dict[str, float | None] = {}
    try:
        for key, template in FLEET_QUERIES.items():
            answer = client.query(template.format(w=window), at=wall, deadline=deadline)
            for labels, value in answer:
                instance = labels.get("instance", "")
                if key in PER_INSTANCE:
                    psi[instance] = _finite(value)
                    continue
                device = labels.get("device")
                if device is not None:
                    figures.setdefault((instance, device), {})[key] = _finite(value)
        causes = diagnoses(client, wall, deadline)
    except PrometheusError as exc:
        return FleetRound(queried_at=wall, elapsed_s=time.monotonic() - started, error=str(exc))
    rows = [
        FleetRow(
            instance,
            device,
            rank=0,
            psi_full_pct=psi.get(instance),
            diagnosis=", ".join(causes.get((instance, device), ())),
            **values,
        )
        for (instance, device), values in figures.items()
    ]
    rows.sort(key=lambda r: (r.severity, r.instance, r.device), reverse=True)
    rows = [dataclasses.replace(row, rank=n) for n, row in enumerate(rows, 1)]
    hosts = frozenset(r.instance for r in rows) | frozenset(psi)
    error = None if rows else f"no data yet: no {DISK_SERIES} series with two samples in {window}"
    return FleetRound(tuple(rows), wall, time.monotonic() - started, error, hosts)


def device_history(
    client: PrometheusClient,
    instance: str,
    device: str,
    *,
    seconds: float = 3600.0,
    points: int = 120,
    window: str = DEFAULT_WINDOW,
    end: float | None = None,
) -> dict[str, list[tuple[str, list[tuple[float, float]]]]]:
    """The last ``seconds`` of one device from range queries: chart key -> [(series, points)].

    Raises:
        PrometheusError: a query failed.
    """
    end = time.time() if end is None else end
    step = max(1.0, seconds / points)
    sel = selector(instance, device)
    deadline = client.deadline()
    out: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
    for key, (_title, template) in HISTORY_QUERIES.items():
        promql = template.format(sel=sel, w=window)
        series = client.query_range(promql, end - seconds, end, step, deadline=deadline)
        out[key] = [
            (
                labels.get("op", "r" if len(series) > 1 else ""),
                [(t, v) for t, v in pts if math.isfinite(v)],
            )
            for labels, pts in series
        ]
    return out
