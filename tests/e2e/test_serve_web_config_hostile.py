"""``serve --web-config`` against hostile files and curious clients (#22 items 8 and 10).

Before the fix: a web-config, certificate, key or client CA that was a FIFO hung ``serve``
forever at start; an unknown user name was checked against a fixed cost-10 dummy hash while
a real user paid their own hash's cost, so the answer's time told which names exist; a hash
that was not valid bcrypt was accepted and its user always got 401, unexplained; and YAML
nested thousands of levels deep was a RecursionError traceback.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from iotop_plus.export.webconfig import (
    MAX_DEPTH,
    WebConfigError,
    bcrypt_cost,
    load_web_config,
)
from iotop_plus.programs import find_program
from tests.support.cli import serve

START_TIMEOUT_S = 30.0
"""``serve`` refuses a bad config in well under a second; past this, it hung."""


def serve_argv(tmp_path: Path, *args: str, port: int = 0) -> list[str]:
    return [
        *(sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state")),
        *("serve", "--listen", f"127.0.0.1:{port}", "--interval", "1", *args),
    ]


def refused(tmp_path: Path, config: Path) -> str:
    """Run the real ``serve --web-config config``; it must refuse it in one line with exit 2.
    Returns that line."""
    done = subprocess.run(
        serve_argv(tmp_path, "--web-config", str(config)),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip()


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = find_program("openssl")
    if openssl is None:
        pytest.skip("openssl not installed")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "tls.crt", where / "tls.key"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


# -- item 10: FIFOs where a file is expected -------------------------------------------------


def test_a_web_config_that_is_a_fifo_is_one_line_not_a_hang(tmp_path: Path) -> None:
    config = tmp_path / "web.yml"
    os.mkfifo(config)
    line = refused(tmp_path, config)
    assert line == f"iotop-plus: error: --web-config {config}: not a regular file (a FIFO)"


@pytest.mark.parametrize("which", ["cert_file", "key_file", "client_ca_file"])
def test_a_certificate_or_key_that_is_a_fifo_is_one_line_not_a_hang(
    tmp_path: Path, tls_pair: tuple[Path, Path], which: str
) -> None:
    files = {"cert_file": tls_pair[0], "key_file": tls_pair[1], "client_ca_file": tls_pair[0]}
    files[which] = tmp_path / f"{which}.pem"
    os.mkfifo(files[which])
    config = tmp_path / "web.yml"
    config.write_text(
        "tls_server_config:\n"
        + "".join(f"  {key}: {path}\n" for key, path in files.items())
        + "  client_auth_type: RequireAndVerifyClientCert\n"
    )
    line = refused(tmp_path, config)
    assert f"cannot load {which} {files[which]}: not a regular file (a FIFO)" in line


def test_certificates_that_are_regular_files_still_serve_https(
    tmp_path: Path, tls_pair: tuple[Path, Path]
) -> None:
    import ssl

    cert, key = tls_pair
    config = tmp_path / "web.yml"
    config.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n")
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False
    with serving(tmp_path, config) as port:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        assert response.status == 200 and b"iotop_plus_build_info" in response.read()
        conn.close()


# -- item 8: bcrypt hashes, YAML depth --------------------------------------------------------

GOOD = bcrypt.hashpw(b"right", bcrypt.gensalt(4)).decode()


@pytest.mark.parametrize(
    "bad",
    [
        GOOD[:-1],  # cut short: bcrypt.checkpw says "no" to every password, silently
        GOOD + "x",
        GOOD.replace("$04$", "$03$"),  # cost out of range
        GOOD.replace("$04$", "$32$"),
        "$2b$04$" + "A" * 53,  # a salt bcrypt cannot decode
        GOOD[:-1] + ("z" if GOOD[-1] != "z" else "y"),  # a hash bcrypt never writes
        GOOD[:20] + "!" + GOOD[21:],
        "$2x$" + GOOD[4:],
    ],
    # Named, not shown: GOOD has a new salt in every process, and parallel workers must
    # collect the same test ids.
    ids=["cut-short", "one-more", "cost-3", "cost-32", "bad-salt", "last-char", "bang", "2x"],
)
def test_a_hash_that_is_not_valid_bcrypt_is_refused_at_start(tmp_path: Path, bad: str) -> None:
    config = tmp_path / "web.yml"
    config.write_text(f"basic_auth_users:\n  alice: '{bad}'\n")
    with pytest.raises(WebConfigError, match="alice: not a bcrypt hash"):
        load_web_config(config)
    assert "alice: not a bcrypt hash" in refused(tmp_path, config)


def test_hashes_as_bcrypt_and_htpasswd_write_them_are_accepted(tmp_path: Path) -> None:
    config = tmp_path / "web.yml"
    hashes = {f"u{n}": bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode() for n in range(50)}
    hashes["y"] = "$2y$" + GOOD[4:]
    hashes["a"] = "$2a$" + GOOD[4:]
    config.write_text("basic_auth_users:\n" + "".join(f"  {u}: '{h}'\n" for u, h in hashes.items()))
    web = load_web_config(config)
    assert web.check("u7", "pw") and web.check("y", "right") and not web.check("a", "wrong")


def nested_yaml(levels: int) -> str:
    """A web config whose YAML nests ``levels`` deep in all (the top mapping is one)."""
    return "http_server_config: " + "[" * (levels - 1) + "]" * (levels - 1) + "\n"


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100_000])
def test_yaml_nested_deeper_than_64_levels_is_one_line(tmp_path: Path, levels: int) -> None:
    config = tmp_path / "web.yml"
    config.write_text(nested_yaml(levels))
    line = refused(tmp_path, config)
    assert line == f"iotop-plus: error: --web-config {config}: nested deeper than 64 levels"


def test_yaml_nested_64_levels_is_read(tmp_path: Path) -> None:
    config = tmp_path / "web.yml"
    config.write_text(nested_yaml(MAX_DEPTH))
    assert load_web_config(config).users == {}


def test_yaml_that_is_not_yaml_is_still_one_line_with_its_line(tmp_path: Path) -> None:
    config = tmp_path / "web.yml"
    config.write_text("basic_auth_users:\n  alice: [\n")
    with pytest.raises(WebConfigError, match="not valid YAML at line 3"):
        load_web_config(config)


# -- item 8: the time a wrong answer takes tells nothing -------------------------------------

LOW, HIGH = 4, 12
"""The two costs configured: 12 takes about 240 ms here, 4 about 1 ms."""


def mixed_cost_config(tmp_path: Path) -> Path:
    config = tmp_path / "web.yml"
    low = bcrypt.hashpw(b"low-pw", bcrypt.gensalt(LOW)).decode()
    high = bcrypt.hashpw(b"high-pw", bcrypt.gensalt(HIGH)).decode()
    config.write_text(f"basic_auth_users:\n  low: '{low}'\n  high: '{high}'\n")
    return config


def test_every_name_costs_the_highest_bcrypt_cost_configured(tmp_path: Path) -> None:
    web = load_web_config(mixed_cost_config(tmp_path))
    rounds = {
        user: sum(2 ** bcrypt_cost(h) for h in web.hashes_checked(user))
        for user in ("low", "high", "nobody", "")
    }
    assert rounds == dict.fromkeys(rounds, 2**HIGH)
    # The user's own hash is checked first; a dummy never lets anyone in.
    assert web.hashes_checked("low")[0] == web.users["low"]
    assert web.check("low", "low-pw") and web.check("high", "high-pw")
    assert not web.check("nobody", "low-pw") and not web.check("low", "high-pw")


@contextlib.contextmanager
def serving(tmp_path: Path, config: Path) -> Iterator[int]:
    with serve(
        "--web-config", str(config), state=tmp_path / "state", timeout=START_TIMEOUT_S
    ) as port:
        yield port


def time_401(port: int, user: str) -> float:
    """Seconds from sending a wrong password for ``user`` to the 401."""
    token = base64.b64encode(f"{user}:wrong".encode()).decode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.connect()
    started = time.perf_counter()
    conn.request("GET", "/metrics", headers={"Authorization": f"Basic {token}"})
    response = conn.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    conn.close()
    assert response.status == 401
    return elapsed


@pytest.mark.slow
def test_an_unknown_user_answers_as_slowly_as_a_known_one(tmp_path: Path) -> None:
    # Medians of interleaved rounds, compared as ratios with a wide margin: the costs differ
    # by 2**8 (before the fix: unknown 1/4 of "high", "low" 1/200), the margin is 2x.
    with serving(tmp_path, mixed_cost_config(tmp_path)) as port:
        times: dict[str, list[float]] = {"high": [], "low": [], "nobody": []}
        for _ in range(5):
            for user, seen in times.items():
                seen.append(time_401(port, user))
    median = {user: statistics.median(seen) for user, seen in times.items()}
    for user in ("low", "nobody"):
        assert 0.5 < median[user] / median["high"] < 2.0, median
