"""``snapshot`` JSON carries iostat's ``avg-cpu``: the same keys in the same place as
``iostat -x -o JSON`` prints them, and the same figures from the same counters."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from iotop_plus.commands.snapshot_cpu import CpuTimes, avg_cpu, parse_cpu_line, read_cpu
from iotop_plus.roots import Roots
from tests.support.cli import run_cli

STAT_1 = "cpu  453329 146 143604 35220 3253 0 7234 1518 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
STAT_2 = "cpu  453429 146 143654 35270 3263 10 7244 1528 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"


def test_the_formulas_are_iostats() -> None:
    before, after = parse_cpu_line(STAT_1), parse_cpu_line(STAT_2)
    assert before == CpuTimes(453329, 146, 143604, 35220, 3253, 0, 7234, 1518)
    # Deltas: user 100, system 50 + irq 10 + softirq 10, idle 50, iowait 10, steal 10: 240.
    assert avg_cpu(before, after) == {
        "user": 41.67,
        "nice": 0.0,
        "system": 29.17,
        "iowait": 4.17,
        "steal": 4.17,
        "idle": 20.83,
    }
    assert avg_cpu(before, None) is None and avg_cpu(after, after) is None
    assert parse_cpu_line("intr 1 2\n") is None


def test_since_boot_figures_match_iostats_own() -> None:
    """iostat without an interval prints the averages since boot: ours from one reading
    against zero must agree (the two reads are milliseconds apart against hours of jiffies)."""
    if shutil.which("iostat") is None:
        pytest.skip("iostat (sysstat) is not installed")
    ours = read_cpu(Roots())
    done = subprocess.run(["iostat", "-c", "-o", "JSON"], capture_output=True, text=True)
    theirs = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"][0]["avg-cpu"]
    mine = avg_cpu(CpuTimes(0, 0, 0, 0, 0, 0, 0, 0), ours)
    assert mine is not None and list(mine) == list(theirs)
    for key, value in theirs.items():
        assert mine[key] == pytest.approx(value, abs=0.1), (key, mine, theirs)


def test_snapshot_json_has_avg_cpu_where_iostat_puts_it() -> None:
    run = run_cli("snapshot", "--format", "json", "--interval", "0.2", "--count", "2")
    assert run.returncode == 0, run.stderr
    stats = json.loads(run.stdout)["sysstat"]["hosts"][0]["statistics"]
    for entry in stats:
        cpu = entry["avg-cpu"]
        assert list(cpu) == ["user", "nice", "system", "iowait", "steal", "idle"]
        assert sum(cpu.values()) == pytest.approx(100.0, abs=0.1)
        keys = list(entry)
        assert keys.index("avg-cpu") < keys.index("disk")  # iostat: avg-cpu, then disk
