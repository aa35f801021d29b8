"""Every preset with real fio: on a temporary directory and (read presets) a loop device.

The parsed figures are checked against fio's own JSON, parsed separately here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.results import PERCENTILES, DirectionResult, ProbeResult
from iotop_plus.probe.run_types import ProbeProgress, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.roots import Roots

pytestmark = [pytest.mark.slow]


def _request(preset: str, target: Path | str, runtime: int = 1, size_mb: int = 32) -> ProbeRequest:
    p = PRESETS[preset]
    return ProbeRequest(p, replace(p.params, runtime_s=runtime, size_mb=size_mb), str(target))


def assert_matches_fio(result: ProbeResult, raw_json: str) -> None:
    """Every figure of the result equals the one in fio's JSON."""
    doc = json.loads(raw_json)
    job = doc["jobs"][0]
    assert job["error"] == 0
    assert result.usr_cpu_pct == job["usr_cpu"] and result.sys_cpu_pct == job["sys_cpu"]
    for name in ("read", "write"):
        ours: DirectionResult | None = getattr(result, name)
        theirs: dict[str, Any] = job[name]
        if theirs["total_ios"] == 0:
            assert ours is None
            continue
        assert ours is not None
        assert ours.iops == theirs["iops"]
        assert ours.bw_kib_s == theirs["bw"]
        assert ours.io_bytes == theirs["io_bytes"] and ours.total_ios == theirs["total_ios"]
        assert ours.iops_min == theirs["iops_min"] and ours.iops_max == theirs["iops_max"]
        assert ours.bw_min_kib_s == theirs["bw_min"] and ours.bw_max_kib_s == theirs["bw_max"]
        assert ours.clat.mean_us == pytest.approx(theirs["clat_ns"]["mean"] / 1000)
        assert ours.slat_mean_us == pytest.approx(theirs["slat_ns"]["mean"] / 1000)
        assert ours.lat_mean_us == pytest.approx(theirs["lat_ns"]["mean"] / 1000)
        pct = theirs["clat_ns"]["percentile"]
        for label, key in PERCENTILES:
            assert ours.clat.percentile(label) == pytest.approx(pct[key] / 1000)
    if result.fsync is not None:
        sync = job["sync"]["lat_ns"]
        assert result.fsync.mean_us == pytest.approx(sync["mean"] / 1000)
        assert result.fsync.percentile("p99") == pytest.approx(
            sync["percentile"]["99.000000"] / 1000
        )
    assert [(u.name, u.read_ios, u.write_ios, u.util_pct) for u in result.disk_util] == [
        (d["name"], d["read_ios"], d["write_ios"], d["util"]) for d in doc.get("disk_util", [])
    ]


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_every_preset_on_a_temporary_directory(
    preset: str, tmp_path: Path, fio_bin: str
) -> None:
    seen: list[ProbeProgress] = []
    outcome = await ProbeRunner(Roots(), fio_bin).run(_request(preset, tmp_path), seen.append)
    r = outcome.result
    assert_matches_fio(r, outcome.raw_json)
    assert r.iops > 0 and r.bw_kib_s > 0
    assert (r.fsync is not None) == (preset == "wal")
    assert (r.read is not None) == (PRESETS[preset].rw != "write")
    assert (r.write is not None) == PRESETS[preset].writes
    assert r.is_quick and "60-300 s" in r.quick_label
    assert any(h.code == "short-runtime" for h in r.hints)
    assert r.placement
    assert seen, "fio printed no live status"
    assert list(tmp_path.iterdir()) == [], "the probe file was left behind"
    assert "--readonly" not in outcome.argv


@pytest.mark.root
@pytest.mark.parametrize("preset", sorted(p.name for p in PRESETS.values() if not p.writes))
async def test_read_presets_on_a_loop_device_run_readonly(
    preset: str, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    outcome = await ProbeRunner(Roots(), fio_bin).run(_request(preset, f"/dev/{dev}"))
    assert "--readonly" in outcome.argv
    assert outcome.target.kind == "device" and outcome.target.device == dev
    assert outcome.result.write is None and outcome.result.read is not None
    assert_matches_fio(outcome.result, outcome.raw_json)
    assert [u.name for u in outcome.result.disk_util] == [dev]


@pytest.mark.root
async def test_io_uring_falls_back_to_libaio_when_the_sysctl_disables_it(
    tmp_path: Path, fio_bin: str
) -> None:
    knob = Path("/proc/sys/kernel/io_uring_disabled")
    if not knob.exists():
        pytest.skip("this kernel has no kernel.io_uring_disabled")
    runner = ProbeRunner(Roots(), fio_bin)
    old = knob.read_text()
    knob.write_text("2")
    try:
        outcome = await runner.run(_request("randread", tmp_path))
    finally:
        knob.write_text(old)
    assert outcome.result.params.ioengine == "libaio"
    assert "--ioengine=libaio" in outcome.argv
    assert any("libaio" in n for n in outcome.result.notes)


def test_cli_prints_json_that_matches_the_kept_fio_json(tmp_path: Path, fio_bin: str) -> None:
    target = tmp_path / "target"
    target.mkdir()
    kept = tmp_path / "fio.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "--state-dir",
            str(tmp_path / "state"),
            "probe",
            "mixed",
            "--target",
            str(target),
            "--runtime",
            "1",
            "--set",
            "size=32",
            "--format",
            "json",
            "--keep-json",
            str(kept),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    fio_doc = json.loads(kept.read_text())
    job = fio_doc["jobs"][0]
    assert doc["read"]["iops"] == job["read"]["iops"]
    assert doc["write"]["iops"] == job["write"]["iops"]
    assert doc["bw_kib_s"] == job["read"]["bw"] + job["write"]["bw"]
    assert doc["quick_probe"] and "60-300 s" in doc["quick_probe"]
    assert "IOPS" in proc.stderr and "s left" in proc.stderr  # live progress
    assert list(target.iterdir()) == []


def test_probe_history_is_lost_on_restart(tmp_path: Path, fio_bin: str) -> None:
    """A CLI probe's result is in DIR/probes.jsonl (0600), and a new ProbeHistory on the same
    state directory (the TUI's Probe tab at its next start) has it."""
    from iotop_plus.probe.history import ProbeHistory

    state = tmp_path / "state"
    for _ in range(2):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "iotop_plus",
                "--state-dir",
                str(state),
                "probe",
                "wal",
                "-t",
                str(tmp_path),
                "-r",
                "1",
                "-s",
                "size=32",
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
    probes = state / "probes.jsonl"
    assert oct(probes.stat().st_mode & 0o777) == "0o600"
    history = ProbeHistory.load(state)
    assert history.notes == [] and len(history) == 2
    record = history.get(2)
    assert record is not None and record.result.preset == "wal"
    assert record.result.fsync is not None and record.result.fsync.mean_us > 0


def test_cli_table_shows_the_result_card(tmp_path: Path, fio_bin: str) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "--state-dir",
            str(tmp_path.parent / f"{tmp_path.name}-state"),
            "probe",
            "wal",
            "-t",
            str(tmp_path),
            "-r",
            "1",
            "-s",
            "size=32",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for text in (
        "WAL / commit latency",
        "fsync µs",
        "p99.99",
        "quick probe",
        "reference:",
        "CPU: usr",
    ):
        assert text in proc.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.root
async def test_history_compares_read_ahead_128_with_16_on_the_same_preset(
    make_loop: Callable[..., str], fio_bin: str
) -> None:
    from iotop_plus.probe.history import ProbeHistory, compare, settings_in_force

    dev = make_loop(size_mb=64)
    ra = Path(f"/sys/block/{dev}/queue/read_ahead_kb")
    history = ProbeHistory()
    runner = ProbeRunner(Roots(), fio_bin)
    for value in ("128", "16"):
        ra.write_text(value)  # our own loop device: the seeds' read-ahead study
        subprocess.run(["blockdev", "--flushbufs", f"/dev/{dev}"], check=True)
        request = _request("seqscan", f"/dev/{dev}")
        request = replace(request, params=replace(request.params, direct=False, bs="8k"))
        outcome = await runner.run(request)
        history.add(outcome.result, settings_in_force(Roots(), outcome.target.device))
    first, second = history.get(1), history.get(2)
    assert first is not None and second is not None
    rows = {row.label: row for row in compare(first, second)}
    assert (rows["read_ahead_kb"].a, rows["read_ahead_kb"].b) == ("128", "16")
    assert rows["read_ahead_kb"].delta == "changed"
    assert rows["IOPS"].delta and rows["device I/Os"].a != "-"
    # Buffered reads: the device served fewer, larger reads than fio issued.
    r = first.result
    assert r.read is not None
    assert sum(u.read_ios for u in r.disk_util) < r.read.total_ios
