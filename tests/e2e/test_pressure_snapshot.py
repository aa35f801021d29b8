"""`snapshot --format json` carries this host's real pressure (PSI) in every statistic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_snapshot_json_has_the_hosts_pressure_in_every_statistic() -> None:
    if not Path("/proc/pressure/io").exists():
        pytest.skip("this kernel has no PSI")
    proc = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "snapshot", "-f", "json", "-c", "2", "-i", "0.3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pressure" not in proc.stderr
    stats = json.loads(proc.stdout)["sysstat"]["hosts"][0]["statistics"]
    assert len(stats) == 2
    for stat in stats:
        io = stat["pressure"]["io"]
        assert set(io) == {"some", "full"}
        assert set(io["some"]) == {"avg10", "avg60", "avg300", "total_us"}
        assert 0 <= io["some"]["avg10"] <= 100 and io["full"]["avg10"] <= io["some"]["avg10"]
        assert set(stat["pressure"]) >= {"io", "memory", "cpu"}
    # total_us is a counter read at each frame: it never goes back.
    first, second = (s["pressure"]["io"]["some"]["total_us"] for s in stats)
    assert second >= first
    live = Path("/proc/pressure/io").read_text().split()
    total_now = int(live[4].removeprefix("total="))
    assert total_now >= second
