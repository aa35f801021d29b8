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
malformed is one :class:`WebConfigError` line (the command exits 2), found at start: a hash
that is not bcrypt, YAML nested deeper than :data:`MAX_DEPTH` levels, or a config,
certificate or key that is not a regular file (a FIFO would block the open forever).

Every password check costs the same, whoever is named: an
unknown user is checked against a dummy hash of the highest cost configured, and a user whose
hash has a lower cost is checked against dummies that make up the difference. A user name
cannot be found by timing the answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotop_plus.roots import open_regular, open_regular_binary

MAX_CONFIG_BYTES = 1 << 20
MAX_DEPTH = 64
"""Deeper YAML is refused: the format is 3 levels deep."""

#: exporter-toolkit's client_auth_type values that Python's ssl module can honour.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version"}
_TOP_KEYS = {"tls_server_config", "basic_auth_users", "http_server_config"}
_MIN_VERSION = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
# A bcrypt hash as bcrypt writes it: cost 04-31, a 22-character salt whose last character
# carries 2 bits (so only . O e u), 31 characters of hash whose last carries 4 bits.
_BCRYPT = re.compile(
    r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{21}[.Oeu][./A-Za-z0-9]{30}"
    r"[.26CGKOSWaeimquy]"
)


class WebConfigError(Exception):
    """The web config cannot be used; one line naming the file and the problem."""


@dataclass
class WebConfig:
    """What the server needs from the file."""

    ssl_context: ssl.SSLContext | None = None
    """Server-side TLS, or None for plain HTTP."""
    users: dict[str, bytes] = field(default_factory=dict)
    """Basic-auth users and their bcrypt hashes (checked by :func:`bcrypt_cost`); empty: no
    authentication."""
    _good: set[bytes] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _dummies: dict[int, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Make the dummy hashes now (about two hashes of the highest cost), not at the first
        scrape, where the time would tell that a dummy was being made."""
        import bcrypt

        costs = [bcrypt_cost(h) for h in self.users.values()]
        top = max(costs, default=0)
        wanted = {top} if costs else set()
        for cost in costs:
            wanted.update(range(cost, top))
        for cost in sorted(wanted):
            # A password nobody knows: a dummy never lets anyone in (see check()).
            self._dummies[cost] = bcrypt.hashpw(os.urandom(16), bcrypt.gensalt(cost))

    def hashes_checked(self, user: str) -> tuple[bytes, ...]:
        """The hashes a check of ``user`` runs bcrypt on, together ``2**`` the highest cost
        configured rounds for any name: the user's own hash, then dummies of its cost, its
        cost + 1... up to the highest (2**c + 2**c + 2**(c+1) + ... = 2**top); for a name
        that is not configured, the dummy of the highest cost."""
        hashed = self.users.get(user)
        if not self._dummies:
            return ()
        if hashed is None:
            return (self._dummies[max(self._dummies)],)
        top = max(self._dummies)
        return (hashed, *(self._dummies[c] for c in range(bcrypt_cost(hashed), top)))

    def check(self, user: str, password: str) -> bool:
        """Whether ``user``/``password`` may scrape. Right pairs are remembered in memory (as
        the SHA-256 of user and password), so a scrape every 15 s does not pay bcrypt's cost
        each time."""
        import bcrypt

        digest = hashlib.sha256(f"{user}\0{password}".encode("utf-8", "surrogateescape")).digest()
        with self._lock:
            if any(hmac.compare_digest(digest, good) for good in self._good):
                return True
        hashed = self.users.get(user)
        secret = password.encode("utf-8", "surrogateescape")
        matched = [bcrypt.checkpw(secret, h) for h in self.hashes_checked(user)]
        ok = hashed is not None and matched[0]  # the user's own hash, never a dummy
        if ok:
            with self._lock:
                self._good.add(digest)
        return ok


def bcrypt_cost(hashed: bytes) -> int:
    """The cost (log2 of the rounds) of a hash that :data:`_BCRYPT` accepted."""
    return int(hashed[4:6])


def load_web_config(path: Path) -> WebConfig:
    """Read and check ``path``; TLS files are loaded now, so a bad key fails at start.

    Raises:
        WebConfigError: one line.
    """
    import yaml

    where = f"--web-config {path}"
    try:
        with open_regular_binary(path) as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise WebConfigError(f"{where}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise WebConfigError(f"{where}: larger than {MAX_CONFIG_BYTES:,} bytes")
    try:
        _check_depth(raw, where)
        doc = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise WebConfigError(f"{where}: not valid YAML{at}") from None
    except RecursionError:  # _check_depth stops far earlier; never a traceback regardless
        raise WebConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    if doc is None:
        return WebConfig()
    if not isinstance(doc, dict):
        raise WebConfigError(f"{where}: expected a mapping with tls_server_config/basic_auth_users")
    unknown = sorted(str(k) for k in doc if k not in _TOP_KEYS)
    if unknown:
        raise WebConfigError(f"{where}: unknown key {unknown[0]!r}")
    tls = doc.get("tls_server_config")
    context = _tls(tls, path.parent, where) if tls is not None else None
    users = doc.get("basic_auth_users")
    return WebConfig(ssl_context=context, users=_users(users, where) if users is not None else {})


def _check_depth(raw: bytes, where: str) -> None:
    """Refuse YAML nested deeper than :data:`MAX_DEPTH`, from the parser's events: building
    it would recurse once per level, and the scanner slows down with each open bracket, so
    the events stop being read at the first level too deep.

    Raises:
        WebConfigError: too deep.
        yaml.YAMLError: not YAML.
    """
    import yaml

    depth = 0
    for event in yaml.parse(raw, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise WebConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


@contextlib.contextmanager
def _held(path: Path, what: str, where: str) -> Iterator[str]:
    """A path that names the regular file ``path`` was when it was checked.

    ``ssl`` loads certificates and keys only by path, so the file is opened here (without
    blocking, refused unless regular) and ``ssl`` is given ``/proc/self/fd/N``, which opens
    that same file again even if ``path`` is replaced by a FIFO between check and use.

    Raises:
        WebConfigError: ``path`` cannot be opened or is not a regular file.
    """
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise WebConfigError(f"{where}: cannot load {what} {path}: {exc.strerror or exc}") from None
    try:
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


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
        with _held(cert, "cert_file", where) as cert_at, _held(key, "key_file", where) as key_at:
            context.load_cert_chain(cert_at, key_at)
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
            with _held(base / ca, "client_ca_file", where) as ca_at:
                context.load_verify_locations(ca_at)
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
        if not isinstance(hashed, str) or not _BCRYPT.fullmatch(hashed):
            raise WebConfigError(
                f"{where}: basic_auth_users: {name}: not a bcrypt hash (want $2b$NN$ and 53 "
                "characters, cost 04-31; make one with `htpasswd -nBC 10 '' | tr -d ':'`)"
            )
        out[name] = hashed.encode()
    return out
