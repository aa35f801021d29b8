"""The read-only HTTP(S) endpoint of ``serve``: ``GET /metrics`` and a root page, nothing else.

Every other path is 404 and every other method 405: no endpoint changes anything. With
basic-auth users configured, every path needs them (401 otherwise), as in exporter-toolkit.
The TLS handshake runs on the request's own thread, so a slow client cannot stall the others.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.webconfig import WebConfig

DEFAULT_PORT = 9891
"""Not in Prometheus' default port allocations list (its exporter range 9100-9999)."""
DEFAULT_LISTEN = f"127.0.0.1:{DEFAULT_PORT}"
REQUEST_TIMEOUT_S = 10.0

_ROOT_PAGE = (
    b"<!DOCTYPE html><html><head><title>iotop-plus exporter</title></head><body>"
    b'<h1>iotop-plus exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>\n'
)


class ListenError(Exception):
    """``--listen`` is malformed or cannot be bound; one line."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` (every address) into (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ListenError(f"--listen {text!r}: want HOST:PORT, e.g. {DEFAULT_LISTEN}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds only this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class MetricsServer(ThreadingHTTPServer):
    """A threading HTTP server that serves one :class:`FrameCollector`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], collector: FrameCollector, web: WebConfig) -> None:
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.collector = collector
        self.web = web
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        context = self.web.ssl_context
        if context is not None:
            request.settimeout(REQUEST_TIMEOUT_S)
            try:
                request = context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return  # a failed handshake is the client's problem; keep serving
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-response is not worth a traceback on stderr."""

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return int(self.server_address[1])

    def serve_in_thread(self) -> threading.Thread:
        """Serve until :meth:`shutdown`, on a daemon thread."""
        thread = threading.Thread(target=self.serve_forever, name="iotop-plus-http", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer
    server_version = "iotop-plus"
    sys_version = ""
    timeout = REQUEST_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def _authorized(self) -> bool:
        users = self.server.web.users
        if not users:
            return True
        header = self.headers.get("Authorization", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() == "basic":
            try:
                user, sep, password = (
                    base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
                )
            except (binascii.Error, UnicodeDecodeError):
                sep = ""
            if sep and self.server.web.check(user, password):
                return True
        self._reply(401, b"Unauthorized\n", "text/plain; charset=utf-8", auth=True)
        return False

    def _reply(
        self, code: int, body: bytes, content_type: str, *, auth: bool = False, head: bool = False
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if auth:
            self.send_header("WWW-Authenticate", 'Basic realm="iotop-plus"')
        if code == 405:
            self.send_header("Allow", "GET, HEAD")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _get(self, head: bool) -> None:
        if not self._authorized():
            return
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            body, content_type = self.server.collector.render(self.headers.get("Accept"))
            self._reply(200, body, content_type, head=head)
        elif path == "/":
            self._reply(200, _ROOT_PAGE, "text/html; charset=utf-8", head=head)
        else:
            self._reply(404, b"Not Found\n", "text/plain; charset=utf-8", head=head)

    def do_GET(self) -> None:
        self._get(head=False)

    def do_HEAD(self) -> None:
        self._get(head=True)

    def _refuse(self) -> None:
        self._reply(405, b"Method Not Allowed: this exporter is read-only\n", "text/plain")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse
