"""Per-cgroup I/O on fixture trees: layouts, names, limits, rates between changing samples."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.names import cgroup_name, parse_proc_cgroup
from iotop_plus.sampling.cgroups.reader import (
    V1,
    V2,
    CgroupReader,
    CgroupSample,
    cgroup_members,
    cgroup_rates_between,
    detect_layout,
)
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import CGROUPS, PROCESSES
from iotop_plus.sampling.processes.task_cgroups import TASK_CGROUP_REFRESH_S, TaskCgroups
from tests.support.cgroup_trees import (
    CONTAINERD_ID,
    DOCKER_ID,
    POD_UID,
    POD_UID_2,
    POD_UID_3,
    hybrid_tree,
    io_line,
    systemd_tree,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cgroups"


def roots_of(base: Path) -> Roots:
    return Roots(base / "proc", base / "sys")


def test_the_real_ubuntu_tree_reads_a_keyless_device_line_as_zero() -> None:
    reader = CgroupReader(roots_of(FIXTURES / "v2-ubuntu24"))
    sample = reader.sample()
    assert sample.version == V2 and sample.notice is None and sample.problems == ()
    root = sample.cgroups["/"]
    assert root.devices is not None
    assert root.devices["253:0"].rbytes == 0  # "253:0 " is legal
    assert root.devices["254:0"].rbytes == 658568192
    assert sample.device_names["254:0"] == "vda"
    # The io controller is not enabled below process_api: its children's I/O is its own.
    assert sample.cgroups["/process_api/core"].devices is None
    api = sample.cgroups["/process_api"]
    assert api.pressure is not None and api.pressure.some is not None
    assert api.pressure.some.avg10 == 5.09
    assert api.limits is not None and api.limits.weight == 100 and not api.limits.any


def test_systemd_docker_and_kubernetes_cgroups_get_names_people_know() -> None:
    sample = CgroupReader(roots_of(FIXTURES / "v2-systemd")).sample()
    names = {p: cgroup_name(p) for p in sample.cgroups}
    assert names["/system.slice/postgresql.service"] == "postgresql.service"
    assert names["/system.slice"] == "system.slice"
    assert names[f"/system.slice/docker-{DOCKER_ID}.scope"] == f"docker {DOCKER_ID[:12]}"
    assert names["/user.slice/user-1000.slice/session-2.scope"] == "session-2.scope"
    pods = sorted(n for n in names.values() if n.startswith("pod "))
    assert pods == [
        f"pod {POD_UID} (burstable)",
        f"pod {POD_UID_2} (besteffort)",
        f"pod {POD_UID_3} (guaranteed)",
    ]
    container = next(p for p in names if p.endswith(".scope") and "cri-containerd" in p)
    assert names[container] == f"containerd {CONTAINERD_ID[:12]} in pod {POD_UID}"


def test_cgroupfs_driver_layouts_get_the_same_names() -> None:
    sample = CgroupReader(roots_of(FIXTURES / "v2-cgroupfs")).sample()
    names = {cgroup_name(p) for p in sample.cgroups}
    assert f"docker {DOCKER_ID[:12]}" in names
    assert f"pod {POD_UID} (guaranteed)" in names
    assert f"pod {POD_UID_2} (burstable)" in names
    assert f"pod {POD_UID_3} (besteffort)" in names
    assert f"container {CONTAINERD_ID[:12]} in pod {POD_UID}" in names


def test_io_cost_and_io_latency_keys_are_ignored_and_limits_are_read() -> None:
    sample = CgroupReader(roots_of(FIXTURES / "v2-systemd")).sample()
    assert sample.problems == ()
    pg = sample.cgroups["/system.slice/postgresql.service"]
    assert pg.devices is not None and pg.devices["8:0"].rbytes == 4000 * 4096
    assert pg.limits is not None
    assert dict(pg.limits.max["8:0"]) == {
        "rbps": 2097152,
        "wbps": None,
        "riops": None,
        "wiops": 120,
    }
    assert pg.limits.weight == 200 and dict(pg.limits.device_weights) == {"8:0": 300}
    assert dict(pg.limits.latency_us) == {"8:0": 75000}
    assert pg.limits.summary({"8:0": "sda"}) == (
        "rbps=2M@sda wiops=120@sda w=200 w=300@sda lat=75ms@sda"
    )
    nginx = sample.cgroups["/system.slice/nginx.service"]
    assert nginx.devices is not None and nginx.devices["8:0"].rbytes == 1000 * 4096


def _sample_pair(base: Path, before: int, after: int) -> tuple[CgroupSample, CgroupSample]:
    systemd_tree(base, scale=before)
    reader = CgroupReader(roots_of(base))
    first = reader.sample()
    time.sleep(0.05)
    systemd_tree(base, scale=after)
    return first, reader.sample()


def test_rates_are_counter_deltas_over_the_measured_interval(tmp_path: Path) -> None:
    first, second = _sample_pair(tmp_path, 1, 2)
    assert set(cgroup_rates_between(None, first).values()) == {None}  # first sample: no rates
    rates = cgroup_rates_between(first, second)
    elapsed = second.monotonic - first.monotonic
    pg = rates["/system.slice/postgresql.service"]
    assert pg is not None
    assert pg.total.read_bps * elapsed == pytest.approx(4000 * 4096)
    assert pg.total.write_iops * elapsed == pytest.approx(3000)
    assert pg.devices["8:0"].discard_bps == 0.0
    root = rates["/"]
    assert root is not None and set(root.devices) == {"8:0", "8:16", "253:0"}


def test_a_cgroup_that_vanishes_and_comes_back_gets_no_rate(tmp_path: Path) -> None:
    systemd_tree(tmp_path, scale=3)
    reader = CgroupReader(roots_of(tmp_path))
    first = reader.sample()
    nginx = tmp_path / "sys/fs/cgroup/system.slice/nginx.service"
    shutil.rmtree(nginx)
    gone = reader.sample()
    assert "/system.slice/nginx.service" not in gone.cgroups
    assert "/system.slice/nginx.service" not in cgroup_rates_between(first, gone)
    # Made again, with smaller counters: no rate, and in particular no negative one (the
    # kernel gives a new cgroup a new inode; a tmp directory may reuse the old one).
    nginx.mkdir()
    (nginx / "io.stat").write_text(io_line("8:0", 4096, 0))
    back = reader.sample()
    assert cgroup_rates_between(gone, back)["/system.slice/nginx.service"] is None
    assert cgroup_rates_between(first, back)["/system.slice/nginx.service"] is None


def test_counters_that_go_back_give_no_negative_rate(tmp_path: Path) -> None:
    first, second = _sample_pair(tmp_path, 2, 1)
    rates = cgroup_rates_between(first, second)
    assert rates["/system.slice/postgresql.service"] is None
    assert rates["/"] is None
    # A cgroup whose counters did not change has zero rates, not None.
    busy = rates["/kubepods.slice/kubepods-pod" + POD_UID_3.replace("-", "_") + ".slice"]
    assert busy is not None and busy.total.read_bps == 0.0


def test_hybrid_host_says_where_the_figures_come_from(tmp_path: Path) -> None:
    hybrid_tree(tmp_path)
    layout = detect_layout(roots_of(tmp_path))
    unified = tmp_path / "sys/fs/cgroup/unified"
    assert layout.version == V1
    assert layout.notice == (
        f"cgroup v2 at {unified} has no io controller; per-cgroup I/O comes from v1 blkio "
        f"({tmp_path / 'sys/fs/cgroup/blkio'})"
    )
    reader = CgroupReader(roots_of(tmp_path))
    first = reader.sample()
    # v1 files are each cgroup's own: the sample rolls them up.
    slice_ = first.cgroups["/system.slice"].devices
    assert slice_ is not None and slice_["8:0"].rbytes == 4096 + 40960
    assert slice_["8:0"].wbytes == 8192 + 4096 and slice_["8:0"].rios == 11
    root = first.cgroups["/"].devices
    assert root is not None and root["8:0"].rbytes == 45056
    # Pressure comes from the same path in the unified tree.
    cron = first.cgroups["/system.slice/cron.service"]
    assert cron.pressure is not None and cron.pressure.some is not None
    assert first.cgroups["/system.slice/ssh.service"].pressure is None
    time.sleep(0.02)
    hybrid_tree(tmp_path, scale=2)
    rates = cgroup_rates_between(first, reader.sample())
    cron_rates = rates["/system.slice/cron.service"]
    assert cron_rates is not None and cron_rates.total.read_bps > 0


def test_no_cgroup_tree_says_so_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "sys").mkdir()
    sample = CgroupReader(roots_of(tmp_path)).sample()
    assert sample.version is None and sample.cgroups == {}
    assert sample.notice == f"no cgroup tree with I/O figures under {tmp_path}/sys/fs/cgroup"


def test_v2_without_io_and_without_v1_keeps_working(tmp_path: Path) -> None:
    hybrid_tree(tmp_path)
    shutil.rmtree(tmp_path / "sys/fs/cgroup/blkio")
    sample = CgroupReader(roots_of(tmp_path)).sample()
    assert sample.version is None
    assert sample.notice is not None and "has no io controller and there is no v1 blkio" in (
        sample.notice
    )


def test_members_and_process_cgroups() -> None:
    roots = roots_of(FIXTURES / "v2-systemd")
    reader = CgroupReader(roots)
    assert cgroup_members(reader, "/system.slice/nginx.service") == (
        (4343, "nginx"),
        (4344, "nginx"),
    )
    assert cgroup_members(reader, "/system.slice/../..") == ()
    assert cgroup_members(reader, "/gone") == ()
    assert parse_proc_cgroup("0::/system.slice/x.service\n", v2=True) == "/system.slice/x.service"
    v1 = "9:name=systemd:/a\n7:blkio:/system.slice/cron.service\n0::/\n"
    assert parse_proc_cgroup(v1, v2=False) == "/system.slice/cron.service"
    assert parse_proc_cgroup("garbage", v2=True) is None


def test_the_frame_carries_cgroups_only_while_wanted() -> None:
    source = LiveSource(roots_of(FIXTURES / "v2-systemd"), devices=False)
    assert source.next_frame().cgroups is None
    source.want(CGROUPS, True)
    source.detail_cgroup = "/system.slice/postgresql.service"
    frame = source.next_frame()
    assert frame.cgroups is not None
    assert "/system.slice/nginx.service" in frame.cgroups.sample.cgroups
    assert frame.cgroups.members == ((4242, "postgres"),)
    assert set(frame.cgroups.rates.values()) == {None}
    second = source.next_frame()
    assert second.cgroups is not None and second.cgroups.rates["/"] is not None
    source.want(CGROUPS, False)
    assert source.next_frame().cgroups is None


def test_each_tasks_cgroup_is_read_once_and_forgotten_when_it_exits(tmp_path: Path) -> None:
    base = tmp_path / "tree"
    shutil.copytree(FIXTURES / "v2-systemd", base)
    cgroups = TaskCgroups(roots_of(base))
    first = cgroups.update({(4242, 10): None, (4343, 11): None, (999, 12): None})
    assert first == {
        (4242, 10): "/system.slice/postgresql.service",
        (4343, 11): "/system.slice/nginx.service",
    }
    # Cached per task: a second tick reads nothing (the file is gone, the answer stays).
    (base / "proc/4242/cgroup").unlink()
    assert cgroups.update({(4242, 10): None})[(4242, 10)] == "/system.slice/postgresql.service"
    # A new task with the same pid (another start time) is read again.
    assert (4242, 99) not in cgroups.update({(4242, 99): None, (4343, 11): None})
    # A task that moved is seen in its new cgroup once its entry is stale.
    (base / "proc/4343/cgroup").write_text("0::/moved.slice\n")
    assert cgroups.update({(4343, 11): None})[(4343, 11)] == "/system.slice/nginx.service"
    later = time.monotonic() + TASK_CGROUP_REFRESH_S + 1
    assert cgroups.update({(4343, 11): None}, now=later)[(4343, 11)] == "/moved.slice"


def test_live_process_frames_carry_each_tasks_cgroup() -> None:
    source = LiveSource(devices=False)
    source.want(PROCESSES, True)
    try:
        frame = source.next_frame()
    finally:
        source.close()
    assert frame.processes is not None
    import os

    mine = [path for key, path in frame.processes.cgroups.items() if key[0] == os.getpid()]
    assert mine and mine[0].startswith("/")


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_ten_thousand_cgroups_are_read_ranked_and_laid_out_as_a_tree(mem_path: Path) -> None:
    fast_tmp = mem_path  # in memory (tests/conftest.py): 10,000 cgroups are 30,000 files
    from iotop_plus.sampling.frame.model import CgroupFrame
    from iotop_plus.tui.cgroup_rows import CgroupView, build_cgroup_rows
    from tests.support.cgroup_trees import bump_io_stat, synthetic_tree

    paths = synthetic_tree(fast_tmp, 10_000, lean=True)
    bump_io_stat(fast_tmp, paths, 0)
    reader = CgroupReader(roots_of(fast_tmp))
    first = reader.sample()
    bump_io_stat(fast_tmp, paths, 1, every=7)
    second = reader.sample()
    assert len(second.cgroups) == 10_000 and second.problems == ()
    rates = cgroup_rates_between(first, second)
    busy = [p for p, r in rates.items() if r is not None and r.total.write_bps > 0]
    assert len(busy) >= 10_000 // 7
    started = time.monotonic()
    rows = build_cgroup_rows(CgroupFrame(second, rates), CgroupView())
    took = time.monotonic() - started
    assert len(rows) == 10_000 and rows[0].path == "/"
    seen: set[str] = set()
    for row in rows:  # every row comes after its parent
        parent = row.path.rsplit("/", 1)[0] or "/"
        assert row.path == "/" or parent in seen
        seen.add(row.path)
    print(f"10,000 cgroups: sample {second.duration_s * 1000:.0f} ms, rows {took * 1000:.0f} ms")
