"""Real probes that misled (#22 item 11): a ``wal`` probe on an idle device reported other
I/O, and a CPU-starved host was read as a slow device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]


def _probe_json(state: Path, *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "probe", *args,
         "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.root
def test_a_wal_probe_on_an_idle_raw_device_reports_no_other_io(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    doc = _probe_json(
        tmp_path / "state", "wal", "-t", f"/dev/{dev}", "--confirm", dev, "-r", "2", "--no-trace"
    )
    fio_writes = doc["write"]["total_ios"]
    served = doc["disk_util"][0]["write_ios"]
    # The kernel counts each fsync's flush as a write too: the device "served" about twice.
    assert served >= 1.5 * fio_writes
    assert [h for h in doc["hints"] if h["code"] == "other-io"] == []


def test_a_probe_on_a_cpu_starved_host_says_so_instead_of_blaming_the_device(
    tmp_path: Path, fio_bin: str
) -> None:
    # More runnable busy loops than CPUs, at nice 19: some task always waits for a CPU (CPU
    # pressure near 100 %), while the probe itself still gets its share.
    if not Path("/proc/pressure/cpu").exists():
        pytest.skip("no /proc/pressure/cpu (kernel without PSI)")
    hogs = [
        subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1) + 1)
    ]
    try:
        doc = _probe_json(
            tmp_path / "state", "randread", "-t", str(tmp_path), "-r", "2", "-s", "size=16",
            "--no-trace",
        )  # fmt: skip
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert doc["host_cpu_some_pct"] >= 30
    codes = {h["code"] for h in doc["hints"]}
    assert "cpu-starved" in codes
    assert not codes & {"stalls", "tail-jitter", "idle-device"}
    assert "device?" not in doc["placement"]
