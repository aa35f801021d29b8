"""The fleet client: many hosts' disks through the Prometheus HTTP API.

Every figure is computed by PromQL on the server (``rate()`` over the exporter's counters,
grouped ``by (instance, device)``), so a query round costs the same few requests for one host
or a thousand. A host is the ``instance`` label (REFERENCE.md rulings). HTTP is plain
``urllib``; callers run it off the UI thread.

The server is not trusted (REFERENCE.md rulings, Trust): ``--timeout`` bounds a whole round,
however slowly the answer comes; an answer nested deeper than :data:`MAX_JSON_DEPTH` is
refused before it is parsed; a label value that is not a string is kept as its JSON text.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import http.client
import itertools
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_WINDOW = "1m"
MAX_RESPONSE_BYTES = 64 << 20
MAX_JSON_DEPTH = 64
"""Deeper answers are refused: Prometheus' own are 5 levels deep."""

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


class _Deadline:
    """Shuts down every connection of a query round when its time is up.

    A socket timeout bounds each read, not the answer: a server that sends one byte a second
    never trips it. So each connection's socket is registered here (a duplicate descriptor,
    which outlives the TLS wrapper's detaching the original) and a timer shuts it down at the
    deadline; whatever read is blocked then returns at once.
    """

    def __init__(self, at: float) -> None:
        self.at = at
        """``time.monotonic()`` when the round must be over."""
        self.expired = False
        """Whether the timer fired (the answer, if any, is cut short)."""
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, at - time.monotonic()), self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        """Seconds left, never below a millisecond (a zero timeout would mean non-blocking)."""
        return max(0.001, self.at - time.monotonic())

    def watch(self, sock: socket.socket) -> socket.socket:
        """Shut ``sock`` down at the deadline; returns it."""
        dup = sock.dup()
        with self._lock:
            self._sockets.append(dup)
            if self.expired:
                _shut(dup)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # not connected yet, or gone: nothing to wait for
        sock.shutdown(socket.SHUT_RDWR)


def _watched(http_class: Callable[..., Any], deadline: _Deadline) -> Callable[..., Any]:
    """``http_class`` whose sockets ``deadline`` watches (plain, TLS and proxy tunnels alike:
    ``http.client`` makes each through the connection's ``_create_connection``)."""

    def make(*args: Any, **kwargs: Any) -> Any:
        connection = http_class(*args, **kwargs)
        create = connection._create_connection
        connection._create_connection = lambda *a, **k: deadline.watch(create(*a, **k))
        return connection

    return make


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self.deadline), req, **kwargs)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self.deadline), req, **kwargs)


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_depth(raw: bytes) -> int:
    """How deeply the arrays and objects of the JSON text ``raw`` nest, without parsing it
    (``json`` recurses once per level: thousands of levels are a RecursionError)."""
    # Drop escaped backslashes, then escaped quotes: every quote left opens or closes a
    # string, so every other piece between quotes is outside the strings.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    steps = outside.translate(_BRACKET_STEP, _NOT_BRACKETS)
    return max(itertools.accumulate(array.array("b", steps)), default=0)


def label_text(value: object) -> str:
    """A label value as text: a string as it is, anything else as its JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _labels(metric: object) -> dict[str, str]:
    if not isinstance(metric, dict):
        raise TypeError("metric is not an object")
    return {str(k): label_text(v) for k, v in metric.items()}


class PrometheusClient:
    """The few calls of the Prometheus HTTP API the fleet view needs."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"--prometheus {url!r}: want an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.timeout = timeout
        """Seconds a whole round (:func:`fleet_round`, :func:`device_history`) may take."""

    def deadline(self) -> float:
        """The ``time.monotonic()`` by which a round started now must end."""
        return time.monotonic() + self.timeout

    def _get(self, path: str, params: Mapping[str, str], deadline: float | None) -> object:
        full = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(full, headers={"Accept": "application/json"})
        with _Deadline(self.deadline() if deadline is None else deadline) as watch:
            if watch.at <= time.monotonic():
                raise PrometheusError(self._late())
            opener = urllib.request.build_opener(_WatchedHTTP(watch), _WatchedHTTPS(watch))
            try:
                with opener.open(request, timeout=watch.remaining()) as response:
                    raw = response.read(MAX_RESPONSE_BYTES + 1)
            except urllib.error.HTTPError as exc:
                try:
                    detail = _error_of(exc.read(65536))
                except (OSError, http.client.HTTPException):
                    detail = None
                if watch.expired:
                    raise PrometheusError(self._late()) from None
                raise PrometheusError(
                    f"Prometheus answered {exc.code}: {detail or exc.reason}"
                ) from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                reason = getattr(exc, "reason", None) or exc
                # A socket timeout is the remaining time at the start: it fires at the deadline.
                if watch.expired or isinstance(reason, TimeoutError):
                    raise PrometheusError(self._late()) from None
                raise PrometheusError(f"Prometheus unreachable at {self.url}: {reason}") from None
            if watch.expired:  # the answer was cut short at the deadline
                raise PrometheusError(self._late())
        if len(raw) > MAX_RESPONSE_BYTES:
            raise PrometheusError(f"answer larger than {MAX_RESPONSE_BYTES:,} bytes")
        if json_depth(raw) > MAX_JSON_DEPTH:
            raise PrometheusError(f"answer nested deeper than {MAX_JSON_DEPTH} levels: refused")
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):
            raise PrometheusError(f"{self.url} did not answer JSON: is it Prometheus?") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            raise PrometheusError(f"query failed: {_error_of(raw) or 'no status'}")
        return doc.get("data")

    def _late(self) -> str:
        return f"no complete answer from {self.url} within --timeout {self.timeout:g} s"

    def query(
        self, promql: str, at: float | None = None, *, deadline: float | None = None
    ) -> list[tuple[dict[str, str], float]]:
        """An instant query: (labels, value) per series. ``deadline`` (monotonic) defaults
        to ``timeout`` from now."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params, deadline)
        out: list[tuple[dict[str, str], float]] = []
        for series in _result(data, "vector"):
            try:
                out.append((_labels(series["metric"]), float(series["value"][1])))
            except (KeyError, TypeError, ValueError, IndexError):
                continue
        return out

    def query_range(
        self,
        promql: str,
        start: float,
        end: float,
        step: float,
        *,
        deadline: float | None = None,
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        """A range query: (labels, [(time, value)]) per series."""
        params = {
            "query": promql,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
        }
        data = self._get("/api/v1/query_range", params, deadline)
        out = []
        for series in _result(data, "matrix"):
            try:
                points = [(float(t), float(v)) for t, v in series["values"]]
                out.append((_labels(series["metric"]), points))
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
    deadline = client.deadline()
    figures: dict[tuple[str, str], dict[str, float | None]] = {}
    psi: dict[str, float | None] = {}
    try:
        for key, template in FLEET_QUERIES.items():
            answer = client.query(template.format(w=window), at=wall, deadline=deadline)
            for labels, value in answer:
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
        FleetRow(instance, device, rank=0, psi_full_pct=psi.get(instance), **values)
        for (instance, device), values in figures.items()
    ]
    rows.sort(key=lambda r: (r.severity, r.instance, r.device), reverse=True)
    rows = [dataclasses.replace(row, rank=n) for n, row in enumerate(rows, 1)]
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
