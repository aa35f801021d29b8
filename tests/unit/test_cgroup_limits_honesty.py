"""Issue #24 item 3: v1 ``blkio.throttle.*_device`` limits are read next to v2 ``io.max``;
``top --by cgroup`` gives each device its limits and whether the cgroup ran at >= 90 % of
one; v1 and hybrid hosts say once that buffered writes are charged to the root; the limits
are exported and recorded (type ``L``). Fixture trees written by the tests."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus import cli
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.view import ExportSampler
from iotop_plus.record.recorded_who import with_limits
from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.limits import (
    V1_WRITEBACK_NOTE,
    device_limits,
    limits_doc,
)
from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupReader, IoRates
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import CgroupFrame
from tests.support.cgroup_trees import hybrid_tree, systemd_tree, write_cgroup

CRON = "/system.slice/cron.service"


def _run(base: Path, *args: str) -> int:
    return cli.main(
        ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys"), "top", *args]
    )


def throttled_hybrid(base: Path, scale: int = 1) -> Path:
    """A hybrid host whose cron.service has a v1 read IOPS limit of 10 on sda (8:0) and a
    write bandwidth limit of 1 GB/s on sdb (8:16)."""
    hybrid_tree(base, scale)
    blkio = base / "sys" / "fs" / "cgroup" / "blkio"
    write_cgroup(
        blkio,
        CRON,
        {
            "blkio.throttle.read_iops_device": "8:0 10\n",
            "blkio.throttle.write_bps_device": "8:16 1000000000\n",
            "blkio.throttle.read_bps_device": "",
            "blkio.throttle.write_iops_device": "",
        },
    )
    return blkio


def test_v1_throttle_files_are_the_limits_in_force(tmp_path: Path) -> None:
    throttled_hybrid(tmp_path)
    sample = CgroupReader(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")).sample()
    assert sample.version == "v1"
    limits = sample.cgroups[CRON].limits
    assert limits is not None and limits.source == "blkio.throttle"
    assert dict(limits.max) == {
        "8:0": {"rbps": None, "wbps": None, "riops": 10, "wiops": None},
        "8:16": {"rbps": None, "wbps": 1000000000, "riops": None, "wiops": None},
    }
    assert sample.cgroups["/system.slice"].limits is None  # no throttle files written there


def test_a_malformed_v1_throttle_file_is_one_problem_line(tmp_path: Path) -> None:
    blkio = throttled_hybrid(tmp_path)
    (blkio / CRON.strip("/") / "blkio.throttle.read_iops_device").write_text("sda ten\n")
    sample = CgroupReader(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")).sample()
    assert sample.cgroups[CRON].limits is None
    [problem] = [p for p in sample.problems if "read_iops_device" in p]
    assert "'sda ten'" in problem and CRON in problem


def test_top_by_cgroup_json_gives_v1_limits_throttled_and_the_writeback_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    throttled_hybrid(tmp_path, scale=1)
    # cron.service reads 9 more 4 KiB requests per scale step: far over 10 IOPS in < 1 s.
    timer = threading.Timer(0.2, throttled_hybrid, args=(tmp_path,), kwargs={"scale": 100})
    timer.start()
    try:
        code = _run(tmp_path, "--by", "cgroup", "-f", "json", "-c", "1", "-i", "0.5")
    finally:
        timer.join()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err.count(V1_WRITEBACK_NOTE) == 1
    rows = {r["cgroup"]: r for r in json.loads(out)["statistics"][0]["cgroups"]}
    sda = rows[CRON]["devices"]["sda"]
    assert sda["limits"] == {
        "rbps": None,
        "wbps": None,
        "riops": 10,
        "wiops": None,
        "source": "blkio.throttle",
    }
    assert sda["throttled"] is True
    # sdb did no I/O: listed for its limit, far from it.
    sdb = rows[CRON]["devices"]["sdb"]
    assert sdb["limits"]["wbps"] == 1000000000 and sdb["throttled"] is False
    assert sdb["read_bps"] is None
    ssh = rows["/system.slice/ssh.service"]["devices"]["sda"]
    assert ssh["limits"] is None and ssh["throttled"] is False


def test_top_by_cgroup_json_gives_v2_io_max_and_throttled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    systemd_tree(tmp_path, scale=1)
    timer = threading.Timer(0.2, systemd_tree, args=(tmp_path,), kwargs={"scale": 2})
    timer.start()
    try:
        code = _run(tmp_path, "--by", "cgroup", "-f", "json", "-c", "1", "-i", "0.5")
    finally:
        timer.join()
    out, err = capsys.readouterr()
    assert code == 0 and V1_WRITEBACK_NOTE not in err
    rows = {r["cgroup"]: r for r in json.loads(out)["statistics"][0]["cgroups"]}
    sda = rows["/system.slice/postgresql.service"]["devices"]["sda"]
    # io.max: rbps=2097152 wiops=120; it read 4000 x 4 KiB in half a second (> 2 MiB/s).
    assert sda["limits"] == {
        "rbps": 2097152,
        "wbps": None,
        "riops": None,
        "wiops": 120,
        "source": "io.max",
    }
    assert sda["throttled"] is True


def _rates(read_iops: float) -> CgroupRates:
    r = IoRates(0.0, 0.0, read_iops, 0.0, 0.0)
    return CgroupRates(r, MappingProxyType({"8:0": r}))


def test_throttled_means_90_percent_of_a_limit_over_the_interval(tmp_path: Path) -> None:
    throttled_hybrid(tmp_path)
    sample = CgroupReader(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")).sample()

    def sda_limit(read_iops: float) -> bool:
        [limit] = [x for x in device_limits(sample, {CRON: _rates(read_iops)}) if x.devno == "8:0"]
        return limit.throttled

    assert sda_limit(9.0) and sda_limit(10.0) and not sda_limit(8.9)


def test_limits_are_recorded_as_l_and_put_back_on_replayed_cgroups(tmp_path: Path) -> None:
    throttled_hybrid(tmp_path)
    sample = CgroupReader(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")).sample()
    doc = json.loads(json.dumps(limits_doc(sample)))  # as the recording holds it
    assert doc == {
        CRON: {
            "sda": {
                "rbps": None,
                "wbps": None,
                "riops": 10,
                "wiops": None,
                "source": "blkio.throttle",
            },
            "sdb": {
                "rbps": None,
                "wbps": 1000000000,
                "riops": None,
                "wiops": None,
                "source": "blkio.throttle",
            },
        }
    }
    # A replayed cgroup part (devices by name, as recorded) gets them back.
    replayed = CgroupFrame(
        type(sample)(0.0, 0.0, "v1", "/", MappingProxyType({})),
        MappingProxyType({CRON: None}),
    )
    back = with_limits(replayed, doc)
    assert back is not None
    [sda] = [x for x in device_limits(back.sample) if x.device == "sda"]
    assert sda.cgroup == CRON and sda.source == "blkio.throttle" and sda.limits["riops"] == 10
    assert with_limits(replayed, {"/x": "hostile"}) is replayed
    assert with_limits(None, doc) is None


def test_serve_exports_each_limit_in_force(tmp_path: Path) -> None:
    throttled_hybrid(tmp_path)
    roots = Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")
    sampler = ExportSampler(LiveSource(roots), 1.0, cgroup_depth=3)
    sampler.step()
    text = FrameCollector(sampler.view).render(None)[0].decode()
    assert f'iotop_plus_cgroup_io_limit{{cgroup="{CRON}",device="sda",kind="riops"}} 10.0' in text
    assert f'iotop_plus_cgroup_io_limit{{cgroup="{CRON}",device="sdb",kind="wbps"}} 1e+09' in text
    assert 'kind="rbps"' not in text  # no read bandwidth limit anywhere


def test_the_table_names_each_throttled_cgroup_under_its_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    throttled_hybrid(tmp_path, scale=1)
    timer = threading.Timer(0.2, throttled_hybrid, args=(tmp_path,), kwargs={"scale": 100})
    timer.start()
    try:
        code = _run(tmp_path, "--by", "cgroup", "-c", "1", "-i", "0.5")
    finally:
        timer.join()
    out = capsys.readouterr().out
    assert code == 0
    [line] = [x for x in out.splitlines() if x.startswith("throttled: ")]
    assert line.startswith("throttled: riops 10 (") and line.endswith(f"on sda by {CRON}")
