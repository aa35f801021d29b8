"""v1 blkio for real: a cgroup reading a loop device of ours. Where no cgroup has a throttle
rule on the device, the kernel's root blkio file has no line for it and ``top --by cgroup``
says "not counted" (null), never 0; once a rule is set the device is counted and the
cgroup's reads show."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import V1, detect_layout
from tests.support.cli import run_cli
from tests.support.hostile_host import READER
from tests.support.numbered_loop import numbered_loop
from tests.support.wait import holds_within

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.serial]  # adds, removes a device


@pytest.fixture
def reading(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """(loop device, MAJ:MIN, cgroup dir): a v1 blkio cgroup of ours reading the device."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    layout = detect_layout(Roots())
    if layout.version != V1:
        pytest.skip("no v1 blkio hierarchy here")
    fresh = [n for n in range(640, 700) if not Path(f"/sys/block/loop{n}").exists()]
    assert fresh, "loop640 to loop699 all exist"
    with numbered_loop(tmp_path, fresh[0], 32) as dev:  # a new device: never had a rule
        devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
        cgroup = Path(layout.root) / f"iotop-plus-test-{os.getpid()}-not-counted"
        cgroup.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-c", READER, str(cgroup), "reader", f"/dev/{dev}"]
        )
        try:
            yield dev, devno, cgroup
        finally:
            proc.kill()
            proc.wait(10)
            holds_within(lambda: _gone(cgroup), 10)


def _gone(cgroup: Path) -> bool:
    try:
        cgroup.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _rooted(devno: str) -> bool:
    text = Path("/sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes").read_text()
    return any(line.split()[:1] == [devno] for line in text.splitlines())


def _figures(dev: str, cgroup: Path) -> dict[str, Any]:
    run = run_cli("top", "--by", "cgroup", "--all", "--format", "json", "-i", "0.5", "-c", "1")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["statistics"][0]["cgroups"]
    mine = [r for r in rows if r["cgroup"] == f"/{cgroup.name}"]
    assert mine, rows
    return dict(mine[0]["devices"].get(dev) or {})


def test_a_device_without_a_throttle_rule_is_not_counted_then_counted_once_one_is_set(
    reading: tuple[str, str, Path],
) -> None:
    dev, devno, cgroup = reading
    if not _rooted(devno):  # this loop number never had a rule since it was made
        seen = _figures(dev, cgroup)
        assert seen["read_bps"] is None, seen
        assert seen["not_counted"] == f"no throttle rule on {dev} since it was attached"
        table = run_cli("top", "--by", "cgroup", "-i", "0.5", "-c", "1").stdout
        assert "not counted on " in table, table
        # the line names eight devices; other jobs' uncounted loop devices may come first
        assert dev in table or re.search(r"not counted on .* and \d+ more: ", table), table
    (cgroup / "blkio.throttle.read_bps_device").write_text(f"{devno} {1 << 40}\n")
    assert _rooted(devno), "the root's file has the device once a rule is set"
    counted = _figures(dev, cgroup)
    assert "not_counted" not in counted and (counted["read_bps"] or 0) > 0, counted
