"""The fleet client: many hosts' disks through the Prometheus HTTP API.

Every figure is computed by PromQL on the server (``rate()`` over the exporter's counters,
grouped ``by (instance, device)``), so a query round costs the same few requests for one host
or a thousand. A host is the ``instance`` label (REFERENCE.md rulings). HTTP is plain
``urllib`` with a timeout; callers run it off the UI thread.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_WINDOW = "1m"
MAX_RESPONSE_BYTES = 64 << 20

_BY = "sum by (instance, device)"
_P = "iotop_plus_disk_"


#: Column key -> PromQL (``{w}`` is the rate window). Each yields one value per
#: (instance, device), except ``psi_full_pct`` which is per instance.
def _rate_sum(*counters: str) -> str:
    """``sum by (instance, device) (rate(a[{w}]) + rate(b[{w}]))``."""
    return f"{_BY} (" + " + ".join(f"rate({_P}{c}[{{w}}])" for c in counters) + ")"


_IOS = _rate_sum("reads_completed_total", "writes_completed_total")

FLEET_QUERIES: Mapping[str, str] = {
    "iops": _IOS,
    "bytes_s": _rate_sum("read_bytes_total", "written_bytes_total"),
    "await_ms": (
        f"1000 * {_rate_sum('read_time_seconds_total', 'write_time_seconds_total')} / ({_IOS} > 0)"
    ),
    "p99_ms": (
        "1000 * histogram_quantile(0.99, sum by (instance, device, le) "
        f"(rate({_P}request_duration_seconds_bucket[{{w}}])))"
    ),
    "util_pct": f"100 * {_BY} (rate({_P}io_time_seconds_total[{{w}}]))",
    "aqu_sz": f"{_BY} (rate({_P}io_time_weighted_seconds_total[{{w}}]))",
    "psi_full_pct": (
        'sum by (instance) (100 * rate(iotop_plus_pressure_stalled_seconds_total{{resource="io"}}'
        "[{w}]))"
    ),
}

#: Chart key -> (title, PromQL with ``{sel}`` the device selector and ``{w}`` the window).
HISTORY_QUERIES: Mapping[str, tuple[str, str]] = {
    "iops": (
        "IOPS r / w",
        f"rate({_P}reads_completed_total{{sel}}[{{w}}]) or "
        f"label_replace(rate({_P}writes_completed_total{{sel}}[{{w}}]), 'op', 'w', '', '')",
    ),
    "bytes_s": (
        "MB/s r / w",
        f"rate({_P}read_bytes_total{{sel}}[{{w}}]) / 1e6 or "
        f"label_replace(rate({_P}written_bytes_total{{sel}}[{{w}}]) / 1e6, 'op', 'w', '', '')",
    ),
    "await_ms": (
        "await ms",
        f"1000 * (rate({_P}read_time_seconds_total{{sel}}[{{w}}]) + "
        f"rate({_P}write_time_seconds_total{{sel}}[{{w}}])) / (rate({_P}reads_completed_total"
        f"{{sel}}[{{w}}]) + rate({_P}writes_completed_total{{sel}}[{{w}}]) > 0)",
    ),
    "util_pct": ("%util", f"100 * rate({_P}io_time_seconds_total{{sel}}[{{w}}])"),
    "aqu_sz": ("aqu-sz", f"rate({_P}io_time_weighted_seconds_total{{sel}}[{{w}}])"),
}


class PrometheusError(Exception):
    """The query failed: Prometheus unreachable, an HTTP error, or an error answer; one line."""


@dataclass(frozen=True)
class FleetRow:
    """One device of one host, as of the last query round."""

    instance: str
    """The host (the ``instance`` label)."""
    device: str
    """Kernel name of the device."""
    iops: float | None = None
    bytes_s: float | None = None
    await_ms: float | None = None
    p99_ms: float | None = None
    """Where latency histograms are exported; None otherwise."""
    util_pct: float | None = None
    aqu_sz: float | None = None
    psi_full_pct: float | None = None
    """The host's I/O pressure (full), percent of wall time."""

    @property
    def rank(self) -> tuple[float, float, float]:
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


class PrometheusClient:
    """The few calls of the Prometheus HTTP API the fleet view needs."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"--prometheus {url!r}: want an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, params: Mapping[str, str]) -> object:
        full = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(full, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = _error_of(exc.read(65536))
            raise PrometheusError(
                f"Prometheus answered {exc.code}: {detail or exc.reason}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise PrometheusError(f"Prometheus unreachable at {self.url}: {reason}") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise PrometheusError(f"answer larger than {MAX_RESPONSE_BYTES:,} bytes")
        try:
            doc = json.loads(raw)
        except ValueError:
            raise PrometheusError(f"{self.url} did not answer JSON: is it Prometheus?") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            raise PrometheusError(f"query failed: {_error_of(raw) or 'no status'}")
        return doc.get("data")

    def query(self, promql: str, at: float | None = None) -> list[tuple[dict[str, str], float]]:
        """An instant query: (labels, value) per series."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        out: list[tuple[dict[str, str], float]] = []
        for series in _result(data, "vector"):
            try:
                out.append((dict(series["metric"]), float(series["value"][1])))
            except (KeyError, TypeError, ValueError, IndexError):
                continue
        return out

    def query_range(
        self, promql: str, start: float, end: float, step: float
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        """A range query: (labels, [(time, value)]) per series."""
        params = {
            "query": promql,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
        }
        data = self._get("/api/v1/query_range", params)
        out = []
        for series in _result(data, "matrix"):
            try:
                points = [(float(t), float(v)) for t, v in series["values"]]
                out.append((dict(series["metric"]), points))
            except (KeyError, TypeError, ValueError):
                continue
        return out


def _result(data: object, kind: str) -> list[dict]:
    if not isinstance(data, dict) or data.get("resultType") != kind:
        raise PrometheusError(f"unexpected answer (want a {kind})")
    result = data.get("result")
    return [s for s in result if isinstance(s, dict)] if isinstance(result, list) else []


def _error_of(raw: bytes) -> str | None:
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return str(doc["error"])[:200]
    return None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def fleet_round(client: PrometheusClient, window: str = DEFAULT_WINDOW) -> FleetRound:
    """Run every :data:`FLEET_QUERIES` once; never raises (a failure is ``error``)."""
    started, wall = time.monotonic(), time.time()
    figures: dict[tuple[str, str], dict[str, float | None]] = {}
    psi: dict[str, float | None] = {}
    try:
        for key, template in FLEET_QUERIES.items():
            for labels, value in client.query(template.format(w=window), at=wall):
                instance = labels.get("instance", "")
                if key == "psi_full_pct":
                    psi[instance] = _finite(value)
                    continue
                device = labels.get("device")
                if device is not None:
                    figures.setdefault((instance, device), {})[key] = _finite(value)
    except PrometheusError as exc:
        return FleetRound(queried_at=wall, elapsed_s=time.monotonic() - started, error=str(exc))
    rows = [
        FleetRow(instance, device, psi_full_pct=psi.get(instance), **values)
        for (instance, device), values in figures.items()
    ]
    rows.sort(key=lambda r: (r.rank, r.instance, r.device), reverse=True)
    hosts = frozenset(r.instance for r in rows) | frozenset(psi)
    error = (
        None if rows else "no data yet: no iotop_plus_disk_* series with two samples in " + window
    )
    return FleetRound(tuple(rows), wall, time.monotonic() - started, error, hosts)


def selector(instance: str, device: str) -> str:
    """``{instance="...",device="..."}`` with the values escaped for PromQL."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return f'{{instance="{esc(instance)}",device="{esc(device)}"}}'


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
    out: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
    for key, (_title, template) in HISTORY_QUERIES.items():
        series = client.query_range(template.format(sel=sel, w=window), end - seconds, end, step)
        out[key] = [
            (
                labels.get("op", "r" if len(series) > 1 else ""),
                [(t, v) for t, v in pts if math.isfinite(v)],
            )
            for labels, pts in series
        ]
    return out
