"""A quick probe reports what the device does, not what it does while we watch it (#25):
traced, a ~150k IOPS loop device gave 0.71-0.88x the IOPS of an untraced probe (the
tracepoints' own cost, about 0.5 us per request each, comes on top of the BPF programs'),
so probes, sweeps and A/B runs are untraced unless ``--trace`` asks (REFERENCE.md, "Light
as btop": the fallback when 0.95 cannot be reached)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from iotop_plus.cli import build_parser
from iotop_plus.sampling.latency.program import MARKER
from tests.support.wait import holds_within

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "argv",
    [
        ["probe", "randread", "-t", "/tmp"],
        ["sweep", "--target", "/tmp"],
        ["ab", "loop0", "read_ahead_kb=1,2", "--preset", "seqscan", "--target", "/tmp"],
    ],
)
def test_probes_sweeps_and_ab_runs_are_untraced_unless_asked(argv: list[str]) -> None:
    assert build_parser(argv).parse_args(argv).trace is False
    assert build_parser(argv).parse_args([*argv, "--trace"]).trace is True
    assert build_parser(argv).parse_args([*argv, "--no-trace"]).trace is False


def _tracer_of(pid: int) -> bool:
    mark = f"{MARKER} pid={pid}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


@pytest.mark.root
@pytest.mark.slow
def test_a_default_probe_starts_no_tracer_and_says_nothing_about_it(
    make_loop: Callable[..., str], fio_bin: str, tmp_path: Path
) -> None:
    dev = make_loop(32, filled=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"),
         "probe", "randread", "-t", f"/dev/{dev}", "-r", "2", "-q", "-f", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    seen: list[bool] = []

    def ended() -> bool:
        """Whether the probe ended; meanwhile, whether a tracer of its own ran."""
        seen.append(_tracer_of(proc.pid))
        return proc.poll() is not None

    assert holds_within(ended, 120), "the probe did not end"
    traced = any(seen)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert not traced
    doc = json.loads(out)
    assert doc["read"]["block"] is None and doc["issuers"] is None
    assert not [n for n in doc["notes"] if "not traced" in n], doc["notes"]
