"""A hostile Prometheus on 127.0.0.1, served by a thread of the test, for the fleet client.

It answers the two calls the fleet view makes (``/api/v1/query`` and ``/api/v1/query_range``)
with whatever the test hands it: series whose labels are markup, numbers or objects, JSON
nested thousands of levels deep, or an answer dripped one byte a second. Every thread it
starts ends when the test leaves the ``with`` block (a dripping answer checks a stop event
between bytes), so a test can never hang on it.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: (path, query parameters) -> the body of a 200 answer.
Answer = Callable[[str, dict[str, str]], bytes]


def series_answer(labels: list[dict[str, Any]], values: list[str] | None = None) -> Answer:
    """Every instant query answers one sample per label set (``values[i]`` for the i-th,
    default "1"); every range query answers two points of it."""
    each = values if values is not None else ["1"] * len(labels)

    def answer(path: str, params: dict[str, str]) -> bytes:
        result: list[dict[str, Any]]
        if path.endswith("query_range"):
            start = float(params.get("start", "0"))
            result = [
                {"metric": dict(m), "values": [[start, v], [start + 60, v]]}
                for m, v in zip(labels, each, strict=True)
            ]
            data = {"resultType": "matrix", "result": result}
        else:
            at = float(params.get("time", "0"))
            result = [
                {"metric": dict(m), "value": [at, v]} for m, v in zip(labels, each, strict=True)
            ]
            data = {"resultType": "vector", "result": result}
        return json.dumps({"status": "success", "data": data}).encode()

    return answer


def nested_answer(depth: int) -> Answer:
    """An instant-query answer nested ``depth`` levels deep in all: one series (instance "h",
    device "sda") whose label ``x`` is lists in lists, written out without ``json`` (which
    cannot write 100,000 levels either)."""

    def answer(path: str, params: dict[str, str]) -> bytes:
        inner = depth - 5  # {data: {result: [{metric: {x: here}}]}}
        return (
            b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": '
            b'{"instance": "h", "device": "sda", "x": '
            + b"[" * inner
            + b"]" * inner
            + b'}, "value": [0, "1"]}]}}'
        )

    return answer


class FakePrometheus(ThreadingHTTPServer):
    """The server; :attr:`requests` counts the queries it was asked."""

    daemon_threads = True

    def __init__(self, answer: Answer, *, drip_s: float | None = None) -> None:
        """Args:
        answer: Builds each answer's body.
        drip_s: Send the answer one byte every ``drip_s`` seconds (headers included).
        """
        self.answer = answer
        self.drip_s = drip_s
        self.stopping = threading.Event()
        self.requests = 0
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakePrometheus

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self.server.requests += 1
        split = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(split.query))
        body = self.server.answer(split.path, params)
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        whole = head + body
        try:
            if self.server.drip_s is None:
                self.wfile.write(whole)
                return
            for i in range(len(whole)):
                self.wfile.write(whole[i : i + 1])
                self.wfile.flush()
                if self.server.stopping.wait(self.server.drip_s):
                    return
        except OSError:
            return  # the client gave up: that is what the test wants


@contextmanager
def fake_prometheus(answer: Answer, *, drip_s: float | None = None) -> Iterator[FakePrometheus]:
    """Serve ``answer`` on a thread until the block ends."""
    server = FakePrometheus(answer, drip_s=drip_s)
    thread = threading.Thread(target=server.serve_forever, name="fake-prometheus", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
