"""``--web-config FILE``: TLS and basic auth in the exporter-toolkit format.

The format Prometheus' own exporters read with ``--web.config.file``::

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_ca_file: ca.crt              # optional: verify client certificates
      client_auth_type: RequireAndVerifyClientCert   # optional
    basic_auth_users:
      alice: $2b$12$...                   # bcrypt hashes only

Relative file names are relative to the config file, as in exporter-toolkit. Anything
malformed is one :class:`WebConfigError` line (the command exits 2), found at start.
"""

from __future__ import annotations

import hashlib
import hmac
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_CONFIG_BYTES = 1 << 20

#: exporter-toolkit's client_auth_type values that Python's ssl module can honour.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version"}
_TOP_KEYS = {"tls_server_config", "basic_auth_users", "http_server_config"}
_MIN_VERSION = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
# A valid hash checked when the user is unknown, so a wrong name costs as long as a wrong
# password (no user enumeration by timing). bcrypt of "x" at cost 10.
_DUMMY_HASH = b"$2b$10$CwTycUXWue0Thq9StjUM0uJ8c3aOZ6Yb5Bv1i1qK0yTd4V9o9KpTG"


class WebConfigError(Exception):
    """The web config cannot be used; one line naming the file and the problem."""


@dataclass
class WebConfig:
    """What the server needs from the file."""

    ssl_context: ssl.SSLContext | None = None
    """Server-side TLS, or None for plain HTTP."""
    users: dict[str, bytes] = field(default_factory=dict)
    """Basic-auth users and their bcrypt hashes; empty: no authentication."""
    _good: set[bytes] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, user: str, password: str) -> bool:
        """Whether ``user``/``password`` may scrape. Right pairs are remembered (as a keyed
        digest), so a scrape every 15 s does not pay bcrypt's cost each time."""
        import bcrypt

        digest = hashlib.sha256(f"{user}\0{password}".encode("utf-8", "surrogateescape")).digest()
        with self._lock:
            if any(hmac.compare_digest(digest, good) for good in self._good):
                return True
        hashed = self.users.get(user)
        try:
            ok = bcrypt.checkpw(password.encode("utf-8", "surrogateescape"), hashed or _DUMMY_HASH)
        except ValueError:
            ok = False
        ok = ok and hashed is not None
        if ok:
            with self._lock:
                self._good.add(digest)
        return ok


def load_web_config(path: Path) -> WebConfig:
    """Read and check ``path``; TLS files are loaded now, so a bad key fails at start.

    Raises:
        WebConfigError: one line.
    """
    import yaml

    where = f"--web-config {path}"
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise WebConfigError(f"{where}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise WebConfigError(f"{where}: larger than {MAX_CONFIG_BYTES:,} bytes")
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise WebConfigError(f"{where}: not valid YAML{at}") from None
    if doc is None:
        return WebConfig()
    if not isinstance(doc, dict):
        raise WebConfigError(f"{where}: expected a mapping with tls_server_config/basic_auth_users")
    unknown = sorted(str(k) for k in doc if k not in _TOP_KEYS)
    if unknown:
        raise WebConfigError(f"{where}: unknown key {unknown[0]!r}")
    config = WebConfig()
    tls = doc.get("tls_server_config")
    if tls is not None:
        config.ssl_context = _tls(tls, path.parent, where)
    users = doc.get("basic_auth_users")
    if users is not None:
        config.users = _users(users, where)
    return config


def _tls(tls: Any, base: Path, where: str) -> ssl.SSLContext:
    if not isinstance(tls, dict):
        raise WebConfigError(f"{where}: tls_server_config must be a mapping")
    unknown = sorted(str(k) for k in tls if k not in _TLS_KEYS)
    if unknown:
        raise WebConfigError(
            f"{where}: tls_server_config: unknown or unsupported key {unknown[0]!r}"
        )
    for key in ("cert_file", "key_file"):
        if not isinstance(tls.get(key), str) or not tls[key]:
            raise WebConfigError(f"{where}: tls_server_config needs {key}")
    cert, key = base / tls["cert_file"], base / tls["key_file"]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or exc
        raise WebConfigError(f"{where}: cannot load {cert} / {key}: {reason}") from None
    min_version = tls.get("min_version")
    if min_version is not None:
        if min_version not in _MIN_VERSION:
            raise WebConfigError(f"{where}: min_version must be TLS12 or TLS13")
        context.minimum_version = _MIN_VERSION[min_version]
    ca = tls.get("client_ca_file")
    auth_type = tls.get("client_auth_type")
    if auth_type is None:
        auth_type = "RequireAndVerifyClientCert" if ca else "NoClientCert"
    if auth_type not in CLIENT_AUTH:
        raise WebConfigError(
            f"{where}: client_auth_type {auth_type!r} is not supported "
            f"(use one of {', '.join(CLIENT_AUTH)})"
        )
    if auth_type != "NoClientCert":
        if not isinstance(ca, str) or not ca:
            raise WebConfigError(f"{where}: client_auth_type {auth_type} needs client_ca_file")
        try:
            context.load_verify_locations(base / ca)
        except (OSError, ssl.SSLError) as exc:
            raise WebConfigError(
                f"{where}: cannot load client_ca_file {base / ca}: {exc}"
            ) from None
    context.verify_mode = CLIENT_AUTH[auth_type]
    return context


def _users(users: Any, where: str) -> dict[str, bytes]:
    if not isinstance(users, dict):
        raise WebConfigError(f"{where}: basic_auth_users must be a mapping of name: bcrypt hash")
    out: dict[str, bytes] = {}
    for name, hashed in users.items():
        if not isinstance(name, str) or not name or ":" in name:
            raise WebConfigError(f"{where}: basic_auth_users: bad user name {name!r}")
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise WebConfigError(
                f"{where}: basic_auth_users: {name}: not a bcrypt hash (want $2b$...; "
                "make one with `htpasswd -nBC 10 '' | tr -d ':'`)"
            )
        out[name] = hashed.encode()
    return out
