"""``serve`` for real: TLS and basic auth over HTTPS, and a real Prometheus scraping two
instances (this host, and a fixture tree standing in for a second host), read back through the
query API, by the fleet client and by the fleet TUI."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from iotop_plus.export.fleet import PrometheusClient, fleet_round
from iotop_plus.programs import find_program
from iotop_plus.sampling.disks.diskstats import parse_diskstats
from tests.support import cli
from tests.support.cli import free_port

FIXTURES = Path(__file__).parents[1] / "fixtures"
pytestmark = pytest.mark.slow


def serve(
    tmp_path: Path, *args: str, roots: tuple[str, ...] = ()
) -> contextlib.AbstractContextManager[int]:
    """``iotop-plus serve`` (tests/support/cli.py) with its state under ``tmp_path``."""
    return cli.serve(*args, state=tmp_path / "state", roots=roots)


def test_basic_auth_over_tls(tmp_path: Path) -> None:
    import bcrypt

    openssl = find_program("openssl")
    if openssl is None:
        pytest.skip("openssl not installed")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    hashed = bcrypt.hashpw(b"right", bcrypt.gensalt(4)).decode()
    config = tmp_path / "web.yml"
    config.write_text(
        f"tls_server_config:\n  cert_file: {cert.name}\n  key_file: {key.name}\n"
        f"basic_auth_users:\n  alice: '{hashed}'\n"
    )
    context = ssl.create_default_context(cafile=str(cert))
    with serve(tmp_path, "--web-config", str(config)) as port:

        def get(user: str, password: str, path: str = "/metrics", method: str = "GET") -> int:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            conn.request(method, path, headers={"Authorization": f"Basic {token}"})
            response = conn.getresponse()
            body = response.read()
            conn.close()
            if response.status == 200 and path == "/metrics":
                assert b"iotop_plus_build_info" in body
            return response.status

        assert get("alice", "wrong") == 401
        assert get("mallory", "right") == 401
        assert get("alice", "right") == 200
        assert get("alice", "right") == 200  # the remembered pair
        assert get("alice", "right", "/") == 200
        assert get("alice", "right", "/-/reload") == 404
        assert get("alice", "right", "/metrics", "POST") == 405
        with pytest.raises(ssl.SSLError):  # plain HTTP clients get nothing
            ssl.create_default_context().wrap_socket(
                socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1"
            )
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        conn.request("GET", "/metrics")
        assert conn.getresponse().status == 401  # no credentials at all


def api(base: str, query: str) -> list[dict]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return list(json.load(response)["data"]["result"])


def test_prometheus_scrapes_two_hosts_and_fleet_sees_both(tmp_path: Path) -> None:
    prometheus = find_program("prometheus")
    if prometheus is None:
        pytest.skip("prometheus not installed (Debian package prometheus; make sysdeps)")
    fixture: tuple[str, ...] = ("--proc-root", str(FIXTURES / "nvme" / "proc"))
    fixture += ("--sys-root", str(FIXTURES / "nvme" / "sys"))
    # Before serve's first frame: every counter it exports is at least this.
    early = parse_diskstats(Path("/proc/diskstats").read_text(), "d", [], {})
    with (
        serve(tmp_path / "a", "--all") as here,
        serve(tmp_path / "b", roots=fixture) as there,
    ):
        prom_port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n  - job_name: iotop\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{here}', '127.0.0.1:{there}']\n"
        )
        proc = subprocess.Popen(
            [
                *(prometheus, f"--config.file={config}"),
                *(
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                ),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{prom_port}"
        try:
            deadline = time.monotonic() + 60  # Prometheus's start and first scrapes
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError, KeyError, ValueError):
                    rows = fleet_round(PrometheusClient(base, timeout=2), "10s").rows
                    if len({r.instance for r in rows}) == 2:
                        break
                time.sleep(0.5)
            result = fleet_round(PrometheusClient(base), "10s")
            assert result.error is None
            assert result.hosts == {f"127.0.0.1:{here}", f"127.0.0.1:{there}"}
            devices = {(r.instance, r.device) for r in result.rows}
            assert (f"127.0.0.1:{there}", "nvme0n1") in devices

            # The scraped counters are /proc/diskstats as read by one of serve's frames: each
            # lies between a read before serve started and a read after the query (how old
            # the frame Prometheus holds is depends on how busy the host is; not checked).
            query = f'iotop_plus_disk_reads_completed_total{{instance="127.0.0.1:{here}"}}'
            scraped = {s["metric"]["device"]: float(s["value"][1]) for s in api(base, query)}
            now = parse_diskstats(Path("/proc/diskstats").read_text(), "d", [], {})
            # Devices another user attached or detached meanwhile are in only one of the reads;
            # a loop device's name is reused by the next one attached, whose counters start
            # again from 0 (scripts/busy_host.sh does that ten times a second).
            steady = {
                d for d in scraped.keys() & early.keys() & now.keys() if not d.startswith("loop")
            }
            assert steady
            for device in steady:
                assert early[device].reads <= scraped[device] <= now[device].reads, device
            there_reads = api(base, query.replace(str(here), str(there)))
            assert [float(s["value"][1]) for s in there_reads] == [1000000.0]

            # The fleet TUI against the same Prometheus.
            import asyncio

            from iotop_plus.tui.fleet.app import FleetApp

            async def pilot() -> None:
                app = FleetApp(PrometheusClient(base), refresh_s=60, window="10s")
                async with app.run_test(size=(140, 40)) as pilot:
                    for _ in range(100):
                        if app.rounds and app.histories:
                            break
                        await pilot.pause(0.1)
                    from textual.widgets import DataTable, Static

                    table = app.query_one("#fleet-table", DataTable)
                    hosts = {str(table.get_row_at(i)[0]) for i in range(table.row_count)}
                    assert hosts == {f"127.0.0.1:{here}", f"127.0.0.1:{there}"}
                    header = str(app.query_one("#fleet-header", Static).render())
                    assert "last query" in header and "2 hosts" in header
                    assert app.histories >= 1  # the highlighted row's hour was charted
                    await pilot.press("slash")
                    for ch in "nvme":
                        await pilot.press(ch)
                    await pilot.press("enter")
                    await pilot.pause(0.2)
                    assert app.filter_text == "nvme", app.filter_text
                    assert table.row_count == 1 and str(table.get_row_at(0)[1]) == "nvme0n1"

            asyncio.run(pilot())
        finally:
            proc.terminate()
            proc.wait(10)


def test_fleet_says_when_prometheus_is_unreachable() -> None:
    result = fleet_round(PrometheusClient(f"http://127.0.0.1:{free_port()}", timeout=2))
    assert result.rows == () and result.error is not None
    assert result.error.startswith("Prometheus unreachable")
