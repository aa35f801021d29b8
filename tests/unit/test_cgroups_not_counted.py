"""v1 blkio counts a device only once some cgroup has had a throttle rule on it: any other
device's figure is "not counted" (null and why), never 0, in ``top --by cgroup`` and the
Cgroups tab's status, and it has no exporter series."""

from __future__ import annotations

import shutil
from pathlib import Path

from iotop_plus.commands.top_cgroup import interval_json, render_table
from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import V1, CgroupReader, cgroup_rates_between
from iotop_plus.sampling.frame.model import CgroupFrame

FIXTURE = Path(__file__).parents[1] / "fixtures" / "cgroups" / "v1-hybrid"


def hybrid(tmp_path: Path) -> Roots:
    shutil.copytree(FIXTURE, tmp_path / "tree", symlinks=True)
    base = tmp_path / "tree"
    block = base / "sys" / "class" / "block"
    for name in ("sda", "sdb", "dm-0", "sda1"):
        (block / name).mkdir(parents=True, exist_ok=True)
    (block / "sda1" / "partition").write_text("1\n")
    with open(base / "proc" / "diskstats", "a") as fh:
        fh.write("   8       1 sda1 1 0 8 1 1 0 8 1 0 2 2 0 0 0 0 0 0\n")
    return Roots(base / "proc", base / "sys")


def test_devices_without_a_throttle_line_are_not_counted_not_zero(tmp_path: Path) -> None:
    reader = CgroupReader(hybrid(tmp_path))
    first = reader.sample()
    assert first.version == V1
    # sda has lines (a child's file: some cgroup has a rule on it); sdb and dm-0 none; a
    # partition is counted on its disk, never on its own.
    assert first.not_counted == {
        "8:16": "no throttle rule on sdb since it was attached",
        "253:0": "no throttle rule on dm-0 since it was attached",
    }
    second = reader.sample()
    frame = CgroupFrame(second, cgroup_rates_between(first, second))
    doc = interval_json(first, frame, show_all=True)
    for row in doc["cgroups"]:
        sdb = row["devices"]["sdb"]
        assert sdb["read_bps"] is None and sdb["write_bps"] is None
        assert sdb["not_counted"] == "no throttle rule on sdb since it was attached"
        assert "not_counted" not in row["devices"].get("sda", {})
    table = render_table(first, frame, True, str)
    line = [x for x in table.splitlines() if x.startswith("not counted")]
    assert line == [
        "not counted on dm-0, sdb: no throttle rule on them since they were attached (v1 blkio"
        " counts a device's I/O only once some cgroup limits it)"
    ]


def test_v2_counts_every_device(tmp_path: Path) -> None:
    from tests.support.cgroup_trees import base_tree, io_line, write_cgroup

    root = base_tree(tmp_path)
    write_cgroup(root, "/", {"io.stat": io_line("8:0", 4096, 0)})
    sample = CgroupReader(Roots(tmp_path / "proc", tmp_path / "sys")).sample()
    assert sample.not_counted == {}
