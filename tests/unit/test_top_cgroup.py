"""`iotop-plus top --by cgroup` on fixture trees: the JSON shape, the table, a host without."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from iotop_plus import cli
from tests.support.cgroup_trees import DOCKER_ID, systemd_tree

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cgroups"
KEYS = [
    "cgroup",
    "name",
    "read_bps",
    "write_bps",
    "read_iops",
    "write_iops",
    "discard_bps",
    "io_some_avg10",
    "io_full_avg10",
    "devices",
]


def _run(base: Path, *args: str) -> int:
    return cli.main(
        ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys"), "top", *args]
    )


def test_json_has_the_rulings_keys_and_rates_from_a_changing_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    systemd_tree(tmp_path, scale=1)
    # The tree changes while top sleeps between its baseline and its sample.
    timer = threading.Timer(0.3, systemd_tree, args=(tmp_path,), kwargs={"scale": 2})
    timer.start()
    try:
        code = _run(tmp_path, "--by", "cgroup", "-f", "json", "--count", "1", "--interval", "1")
    finally:
        timer.join()
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)
    assert doc["cgroup_version"] == "v2"
    stat = doc["statistics"][0]
    rows = {r["cgroup"]: r for r in stat["cgroups"]}
    pg = rows["/system.slice/postgresql.service"]
    assert list(pg)[: len(KEYS)] == KEYS
    assert pg["name"] == "postgresql.service"
    assert pg["read_bps"] * stat["elapsed_s"] == pytest.approx(4000 * 4096, rel=0.01)
    assert pg["io_some_avg10"] == 1.5 and pg["io_full_avg10"] == 0.5
    assert set(pg["devices"]) == {"sda"}
    assert pg["limits"] == "rbps=2M@sda wiops=120@sda w=200 w=300@sda lat=75ms@sda"
    assert rows[f"/system.slice/docker-{DOCKER_ID}.scope"]["name"] == f"docker {DOCKER_ID[:12]}"
    # Busiest first; the idle guaranteed pod is left out without --all.
    assert stat["cgroups"][0]["cgroup"] == "/"
    assert not any(r["name"].endswith("(guaranteed)") for r in stat["cgroups"])


def test_table_and_all(capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(
        FIXTURES / "v2-systemd", "--by", "cgroup", "--count", "1", "--interval", "0.1", "-a"
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "READ       WRITE" in out and "SOME10 FULL10  CGROUP" in out
    assert f"/system.slice/docker-{DOCKER_ID}.scope (docker {DOCKER_ID[:12]})" in out


def test_a_host_without_per_cgroup_io_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "sys").mkdir()
    code = _run(tmp_path, "--by", "cgroup", "--count", "1", "--interval", "0.1")
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines() == [
        f"iotop-plus: note: no cgroup tree with I/O figures under {tmp_path}/sys/fs/cgroup",
        "iotop-plus: error: no per-cgroup I/O figures on this host",
    ]


def test_by_process_stays_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert cli.main(["top", "--count", "1", "--interval", "0.1", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "processes" in doc["statistics"][0] and time.monotonic() - started < 10
