"""Issue #24 item 5 beyond the function: ``disk[].diagnosis`` and ``disk[].unchecked`` are
always in ``snapshot`` JSON (``--diagnose`` checks throttling too), ``serve`` exports
``iotop_plus_disk_diagnosis{device,cause}``, and the fleet view reads it per device."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from iotop_plus import cli
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.fleet import PrometheusClient, fleet_round
from iotop_plus.export.fleet.queries import DIAGNOSIS, DIAGNOSIS_QUERY
from iotop_plus.export.view import ExportSampler
from iotop_plus.programs import find_program
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.why.diagnosis import CAUSES
from tests.support.fake_prometheus import fake_prometheus
from tests.support.synthetic import SyntheticTree
from tests.unit.test_writeback_context import write_memory

FIXTURES = Path(__file__).parents[1] / "fixtures"


def nvme_with_memory(tmp_path: Path, dirty_kb: int = 1000) -> Path:
    base = tmp_path / "nvme"
    shutil.copytree(FIXTURES / "nvme", base, symlinks=True)
    write_memory(base / "proc", dirty_kb, 0, thresh=100000, bg=50000)
    return base


def snapshot_disks(capsys: pytest.CaptureFixture[str], base: Path, *extra: str) -> list[Any]:
    roots = ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys")]
    interval = [] if "-i" in extra else ["-i", "0.01"]
    code = cli.main([*roots, "snapshot", *interval, "-f", "json", "-a", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    [stat] = json.loads(out)["sysstat"]["hosts"][0]["statistics"]
    return list(stat["disk"])


def test_every_disk_in_snapshot_json_has_a_diagnosis_and_what_was_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    disks = snapshot_disks(capsys, nvme_with_memory(tmp_path))
    assert disks
    for disk in disks:
        assert disk["diagnosis"], disk["disk_device"]
        for entry in disk["diagnosis"]:
            assert list(entry) == ["cause", "evidence", "confidence", "text"]
            assert entry["cause"] in (*CAUSES, "none")
            assert entry["confidence"] in ("high", "medium", "low")
        # No cgroups, tracer, issuers or health were read for a plain snapshot (and this
        # tree has no /proc/pressure).
        assert set(disk["unchecked"]) == {"throttled", "errors", "queue", "cpu", "blocked"}


def test_snapshot_diagnose_reads_cgroups_so_throttling_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    disks = snapshot_disks(capsys, nvme_with_memory(tmp_path), "--diagnose")
    assert all("throttled" not in d["unchecked"] for d in disks)


def busy_tree(tmp_path: Path, dirty_kb: int) -> SyntheticTree:
    tree = SyntheticTree(tmp_path / "tree", 3)
    write_memory(tree.roots.proc, dirty_kb, 0, thresh=100000, bg=50000)
    return tree


def test_a_writeback_storm_is_in_the_json_verdict_of_a_writing_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = busy_tree(tmp_path, 300000)
    timer = threading.Timer(0.2, tree.advance)  # the disks write while snapshot measures
    timer.start()
    try:
        disks = snapshot_disks(capsys, tree.base, "-i", "0.5")
    finally:
        timer.join()
    writing = [d for d in disks if d["w/s"] > 0]
    assert writing
    for disk in writing:
        [first, *_] = disk["diagnosis"]
        assert first["cause"] == "writeback" and first["evidence"]["dirty_kB"] == 300000


def test_serve_exports_one_diagnosis_series_per_cause_that_holds(tmp_path: Path) -> None:
    tree = busy_tree(tmp_path, 300000)
    sampler = ExportSampler(LiveSource(tree.roots), 1.0, show_all=True)
    collector = FrameCollector(sampler.view)
    sampler.step()
    first = collector.render(None)[0].decode()
    assert f"{DIAGNOSIS}{{" not in first  # no rates yet: no verdict
    tree.advance(1.0)
    sampler.step()
    body = collector.render(None)[0]
    found = {
        (s.labels["device"], s.labels["cause"]): s.value
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
        if s.name == DIAGNOSIS
    }
    assert found and set(found.values()) == {1.0}
    frame = sampler.view().frame
    assert frame is not None
    writing = {n for n, r in frame.rates.items() if r is not None and r.w_s > 0}
    assert writing and all((n, "writeback") in found for n in writing)
    promtool = find_program("promtool")
    assert promtool is not None
    done = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_fleet_view_shows_each_devices_causes_from_the_metric() -> None:
    asked: list[str] = []

    def answer(path: str, params: dict[str, str]) -> bytes:
        query = params.get("query", "")
        asked.append(query)
        at = float(params.get("time", "0"))
        if query == DIAGNOSIS_QUERY:
            series = [
                {"instance": "db1", "device": "sda", "cause": "throttled"},
                {"instance": "db1", "device": "sda", "cause": "cpu"},
                {"instance": "db2", "device": "sdb", "cause": "none"},
            ]
        elif re.search(r"psi|pressure", query):
            series = [{"instance": "db1"}, {"instance": "db2"}]
        else:
            series = [{"instance": "db1", "device": "sda"}, {"instance": "db2", "device": "sdb"}]
        result = [{"metric": m, "value": [at, "1"]} for m in series]
        doc = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return json.dumps(doc).encode()

    with fake_prometheus(answer) as prom:
        result = fleet_round(PrometheusClient(prom.url, timeout=5))
    assert result.error is None, result.error
    rows = {(r.instance, r.device): r for r in result.rows}
    assert rows["db1", "sda"].diagnosis == "cpu, throttled"
    assert rows["db2", "sdb"].diagnosis == "none"
    assert DIAGNOSIS_QUERY in asked


def test_the_table_gives_a_why_line_per_device_with_diagnose_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = nvme_with_memory(tmp_path)
    roots = ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys")]
    assert cli.main([*roots, "snapshot", "-i", "0.01", "--diagnose", "nvme0n1", "nvme0n2"]) == 0
    out = capsys.readouterr().out
    why = [line for line in out.splitlines() if line.startswith("why ")]
    assert [line.split(":")[0] for line in why] == ["why nvme0n1", "why nvme0n2"]
    assert all("idle: no I/O to explain" in line for line in why)  # a still fixture tree
    assert cli.main([*roots, "snapshot", "-i", "0.01", "nvme0n1"]) == 0
    assert "why " not in capsys.readouterr().out
