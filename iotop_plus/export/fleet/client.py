"""The Prometheus HTTP API client of the fleet view: instant and range queries, nothing more.

HTTP is plain ``urllib``; callers run it off the UI thread. The server is not trusted:
``--timeout`` bounds a whole round, however slowly the answer
comes; an answer nested deeper than :data:`MAX_JSON_DEPTH` is refused before it is parsed; a
label value that is not a string is kept as its JSON text.
"""

from __future__ import annotations

import array
import contextlib
import http.client
import itertools
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

DEFAULT_TIMEOUT_S = 10.0
MAX_RESPONSE_BYTES = 64 << 20
MAX_JSON_DEPTH = 64
"""Deeper answers are refused: Prometheus' own are 5 levels deep."""


class PrometheusError(Exception):
    """The query failed: Prometheus unreachable, an HTTP error, or an error answer; one line."""


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
