"""``serve --latency`` for real: bpftrace traces a loop device under fio, and the exported
histogram grows between scrapes; without root it is one stderr line and the rest is served."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.programs import find_program
from tests.support.nobody import nobody_env, nobody_python

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(
    argv: list[str], port: int, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        for _ in range(300):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        assert proc.wait(15) == 0


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        return str(reply.read().decode())


def read_count(text: str, dev: str) -> float:
    name = "iotop_plus_disk_request_duration_seconds_count"
    found = re.search(rf'^{name}{{device="{dev}",op="read"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_serve_latency_histogram_grows_under_fio(tmp_path: Path, make_loop, fio_bin) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace)")
    if shutil.which("bpftrace") is None:
        pytest.skip("bpftrace is not installed (make sysdeps installs it)")
    dev = make_loop(32, direct_io=True)
    port = free_port()
    argv = [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"), "serve"]
    argv += ["--listen", f"127.0.0.1:{port}", "--interval", "1", "--all", "--latency"]
    fio = subprocess.Popen(
        [
            *(fio_bin, "--name=lat", f"--filename=/dev/{dev}", "--rw=randread", "--bs=4k"),
            *("--direct=1", "--ioengine=psync", "--readonly", "--time_based", "--runtime=30"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with serving(argv, port) as proc:
            deadline = time.monotonic() + 20
            first = 0.0
            while first == 0.0 and time.monotonic() < deadline:
                time.sleep(0.5)
                first = read_count(scrape(port), dev)
            assert first > 0, "no read histogram for the loop device"
            time.sleep(2.5)
            body = scrape(port)
            assert read_count(body, dev) > first
            promtool = find_program("promtool")
            if promtool is not None:
                done = subprocess.run(
                    [promtool, "check", "metrics"], input=body, capture_output=True, text=True
                )
                assert done.returncode == 0, done.stdout + done.stderr
            le = 'le="1.073741824"'
            bucket = rf'request_duration_seconds_bucket{{device="{dev}",{le},op="read"}}'
            assert re.search(bucket, body)
            assert re.search(rf'queue_time_seconds_total{{device="{dev}",op="read"}}', body)
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "latency not exported" not in err, err
    finally:
        fio.kill()
        fio.wait()


def test_serve_latency_without_root_is_one_line(tmp_path: Path) -> None:
    argv = nobody_python()
    empty = tmp_path / "bin"
    empty.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    port = free_port()
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 65534, 65534)
    argv += ["-m", "iotop_plus", "--state-dir", str(state), "serve"]
    argv += ["--listen", f"127.0.0.1:{port}", "--interval", "0.5", "--latency"]
    with serving(argv, port, env=nobody_env(str(empty))) as proc:
        time.sleep(1.5)
        body = scrape(port)
        assert "iotop_plus_disk_reads_completed_total" in body
        assert "request_duration" not in body
    assert proc.stderr is not None
    lines = [line for line in proc.stderr.read().splitlines() if "latency" in line]
    assert len(lines) == 1 and "needs root" in lines[0], lines
