"""``snapshot --health`` (#26): ``disk[].health`` with exactly the ruled keys, on a captured
tree (no smartctl run on the host) and live (this VM's virtio disk says why it has none)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from iotop_plus import cli
from iotop_plus.sampling.health.part import HEALTH_KEYS
from tests.support.nobody import nobody_directory, nobody_env, nobody_python

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _snapshot(capsys: pytest.CaptureFixture[str], state: Path, *argv: str) -> tuple[Any, str]:
    code = cli.main(["--state-dir", str(state), *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    (host,) = json.loads(out)["sysstat"]["hosts"]
    return host, err


def _tree(name: str) -> list[str]:
    return [
        "--proc-root",
        str(FIXTURES / name / "proc"),
        "--sys-root",
        str(FIXTURES / name / "sys"),
    ]


def test_health_on_a_captured_tree_has_the_ruled_keys_and_runs_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    host, err = _snapshot(
        capsys, tmp_path, *_tree("nvme"), "snapshot", "-i", "0.01", "-f", "json", "--health"
    )
    disks = host["statistics"][0]["disk"]
    assert disks
    for disk in disks:
        health = disk["health"]
        assert list(health) == list(HEALTH_KEYS)
        assert health["source"] in ("sysfs", "none")
        assert "captured tree" in health["reason"]
        assert health["io_errors"] is None  # nothing counts errors under a captured tree
        assert health["age_s"] is not None
    assert err.count("I/O errors: counted on the live host only") == 1


def test_without_health_the_json_has_no_health(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    host, _ = _snapshot(capsys, tmp_path, *_tree("nvme"), "snapshot", "-i", "0.01", "-f", "json")
    assert all("health" not in disk for disk in host["statistics"][0]["disk"])


@pytest.mark.root
def test_live_health_says_why_this_vms_disk_has_no_smart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    host, _ = _snapshot(capsys, tmp_path, "snapshot", "-i", "0.1", "-f", "json", "-a", "--health")
    by_name = {d["disk_device"]: d["health"] for d in host["statistics"][0]["disk"]}
    assert by_name
    for name, health in by_name.items():
        assert list(health) == list(HEALTH_KEYS)
        assert health["io_errors"] == 0 or health["io_errors"] > 0  # counted (root): a number
        driver = Path(f"/sys/block/{name}/device/driver")
        if driver.exists() and os.path.basename(os.readlink(driver)) == "virtio_blk":
            assert health["reason"].startswith("virtio_blk: ")
            assert "Unable to detect device type" in health["reason"]
        if name.startswith("loop"):
            assert health["reason"].startswith("loop: ")


def test_health_with_a_table_says_it_is_json_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = cli.main(
        ["--state-dir", str(tmp_path), *_tree("nvme"), "snapshot", "-i", "0.01", "--health"]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert "--health adds disk[].health to JSON only" in err


@pytest.mark.root
def test_without_root_health_still_reads_and_says_errors_need_root() -> None:
    """As uid 65534: the health line is there, I/O errors are null with one stderr line."""
    disk = next(n for n in sorted(os.listdir("/sys/block")) if not n.startswith(("loop", "zram")))
    with nobody_directory() as home:
        argv = [*nobody_python(), "-m", "iotop_plus", "--state-dir", str(home / "state")]
        argv += ["snapshot", "--health", "-f", "json", "-i", "0.2", disk]
        env = nobody_env("/usr/sbin:/usr/bin:/sbin:/bin")
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd="/", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "iotop-plus: note: I/O errors: cannot read /dev/kmsg (run as root)"
    ]
    (host,) = json.loads(done.stdout)["sysstat"]["hosts"]
    (entry,) = host["statistics"][0]["disk"]
    assert list(entry["health"]) == list(HEALTH_KEYS)
    assert entry["health"]["io_errors"] is None
    assert entry["health"]["reason"]
