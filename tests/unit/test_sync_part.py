"""The sync and journal parts' parsers, readers (on a built /proc tree), JSON and metrics."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.latency.hist import Histogram, bucket_of
from iotop_plus.sampling.sync.files import kdev
from iotop_plus.sampling.sync.jbd2_part import Jbd2Frame, Jbd2Part, kernel_hz
from iotop_plus.sampling.sync.jbd2_program import merge_journal, parse_journal_maps
from iotop_plus.sampling.sync.part import SyncFrame, SyncPart, metric_buckets, sync_summary
from iotop_plus.sampling.sync.program import (
    BY_FD,
    SyncStat,
    SyncTraced,
    merge_sync,
    parse_sync_maps,
    sync_program_text,
)
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory

SDA = kdev(8, 0)
SDA1 = kdev(8, 1)


def bucket_key(ns: int) -> str:
    exp, sub = divmod(bucket_of(ns), 8)
    return f"{exp},{sub}"


def test_parse_keeps_comms_with_commas_and_sums_buckets() -> None:
    maps = {
        "@sy_h": {
            f"{SDA1},12,40,1,{bucket_key(300_000)},post,gres": 3,
            f"{SDA1},12,40,1,{bucket_key(900_000)},post,gres": 1,
            f"0,5,41,{BY_FD},{bucket_key(50_000)},etcd": 2,
        },
        "@sy_s": {f"{SDA1},12,40,1,post,gres": 1_800_000, f"0,5,41,{BY_FD},etcd": 100_000},
        "@sy_m": {f"{SDA1},12,40,1,post,gres": 900_000, f"0,5,41,{BY_FD},etcd": 60_000},
    }
    got = parse_sync_maps(maps)
    pg = got.stats[(SDA1, 12, 40, 1)]
    assert pg.comm == "post,gres"
    assert (pg.hist.count, pg.hist.sum_ns, pg.hist.max_ns) == (4, 1_800_000, 900_000)
    assert got.stats[(0, 5, 41, BY_FD)].hist.count == 2
    both = merge_sync(got, got)
    assert both.stats[(SDA1, 12, 40, 1)].hist.count == 8
    assert merge_sync(None, got) is got


@pytest.mark.parametrize("key", ["1,2,3", "x,1,2,1,3,4,c", "1,2,3,1,99,0,c"])
def test_a_bad_key_is_one_clear_error(key: str) -> None:
    with pytest.raises(ValueError, match="bad @sy_h key"):
        parse_sync_maps({"@sy_h": {key: 1}})


def test_the_program_times_each_sync_at_one_place() -> None:
    text = sync_program_text({"ext4", "xfs", "syscalls"})
    # the ext4 exit drops the syscall's stamp: the syscall's exit then does not count it
    exit_block = text.split("tracepoint:ext4:ext4_sync_file_exit")[1].split("\n}")[0]
    assert "delete(@sy_c[tid])" in exit_block
    assert "/@sy_c[tid]/" in text.split("tracepoint:syscalls:sys_exit_fsync")[1]
    assert "xfs" not in sync_program_text({"ext4", "syscalls"})
    assert sync_program_text(set()) == ""


def world(tmp_path: Path, journal_count: int = 10) -> tuple[Roots, Sample, Inventory, Path]:
    """A /proc with pid 40 holding fd 3 on a real file, and sda1 with a jbd2 journal."""
    proc = tmp_path / "proc"
    data = tmp_path / "data"
    data.mkdir()
    target = data / "wal.log"
    target.write_bytes(b"x")
    (proc / "40" / "fd").mkdir(parents=True)
    os.symlink(target, proc / "40" / "fd" / "3")
    (proc / "fs" / "jbd2" / "sda1-8").mkdir(parents=True)
    (proc / "fs" / "jbd2" / "sda1-8" / "info").write_text(
        f"{journal_count} transactions (9 requested), each up to 8192 blocks\naverage:\n"
    )
    with gzip.open(proc / "config.gz", "wt") as fh:
        fh.write("CONFIG_X=y\nCONFIG_HZ=250\n")
    st = os.stat(target)
    real = (os.major(st.st_dev), os.minor(st.st_dev))
    counters = {
        "sda": DiskCounters(8, 0, "sda", (0,) * 17, 17),
        "sda1": DiskCounters(8, 1, "sda1", (0,) * 17, 17),
        "vdz": DiskCounters(*real, "vdz", (0,) * 17, 17),
    }
    sample = Sample(100.0, 1.0, MappingProxyType(counters))
    inventory = Inventory(
        {
            "sda": BlockDevice("sda", 8, 0, "disk", partitions=("sda1",)),
            "sda1": BlockDevice("sda1", 8, 1, "part", parent="sda", mounts=("/var/lib/pg",)),
            "vdz": BlockDevice("vdz", *real, "disk"),
        }
    )
    return Roots(proc=proc, sys=tmp_path / "sys"), sample, inventory, target


def ctx_of(
    roots: Roots,
    sample: Sample,
    inventory: Inventory,
    traced: object,
    previous: Sample | None = None,
) -> ReadContext:
    return ReadContext(roots, sample, previous, inventory, frozenset({"sync"}), traced=traced)


def test_reader_names_files_through_the_pid_and_puts_partitions_under_their_disk(
    tmp_path: Path,
) -> None:
    roots, sample, inventory, target = world(tmp_path)
    st = os.stat(target)
    real = kdev(os.major(st.st_dev), os.minor(st.st_dev))
    h = Histogram.of([200_000, 300_000, 5_000_000])
    traced = SyncTraced(
        MappingProxyType(
            {
                (real, st.st_ino, 40, 1): SyncStat("postgres", h),
                (SDA1, 77, 41, 0): SyncStat("etcd", Histogram.of([1_000_000])),
                (0, 3, 40, BY_FD): SyncStat("postgres", Histogram.of([100_000])),
                (kdev(0, 44), 9, 40, 0): SyncStat("tmpfs-user", Histogram.of([1])),
            }
        )
    )
    reader = SyncPart().reader(roots)
    frame, events = reader.read(ctx_of(roots, sample, inventory, traced))
    assert isinstance(frame, SyncFrame) and events == ()
    assert set(frame.devices) == {"vdz", "sda"}  # tmpfs has no device; sda1 is on sda
    vdz = frame.devices["vdz"]
    assert {k: x.count for k, x in vdz.calls.items()} == {"fdatasync": 3, "fsync": 1}
    paths = {(f.path, f.pid): f.hist.count for f in vdz.files}
    assert paths == {(str(target), 40): 4}  # by inode and by fd: one file
    sda = sync_summary(frame.devices["sda"])
    assert sda["by_file"] == [
        {"path": "inode 77 on /var/lib/pg", "pid": 41, "comm": "etcd", "count": 1, "p99_us": 1000.0}
    ]
    doc = sync_summary(vdz)
    assert doc["count"] == 4 and doc["max_us"] == 5000.0
    assert 200 <= doc["p50_us"] <= 320


def test_untraced_sync_is_null_with_the_reason(tmp_path: Path) -> None:
    roots, sample, inventory, _ = world(tmp_path)
    ctx = ReadContext(
        roots, sample, None, inventory, frozenset({"sync"}), tracer_status="bpftrace is missing"
    )
    frame, _ = SyncPart().reader(roots).read(ctx)
    assert isinstance(frame, SyncFrame)
    assert frame.status == "bpftrace is missing"
    assert SyncPart().disk_json(frame, "sda") == {"sync": None}


def test_sync_json_round_trips_and_refuses_damage(tmp_path: Path) -> None:
    roots, sample, inventory, _ = world(tmp_path)
    traced = SyncTraced(
        MappingProxyType({(SDA1, 77, 41, 0): SyncStat("etcd", Histogram.of([1_000, 2_000]))})
    )
    part = SyncPart()
    frame, _ = part.reader(roots).read(ctx_of(roots, sample, inventory, traced))
    assert frame is not None
    doc = json.loads(json.dumps(part.to_json(frame)))
    assert part.from_json(doc) == frame
    recorded = part.from_json(json.loads(json.dumps(part.record_json(frame))))
    assert recorded is not None and recorded.devices["sda"].calls == frame.devices["sda"].calls
    assert recorded.devices["sda"].totals == {}
    damaged: list[object] = [
        None,
        [],
        {"devices": {"sda": {"calls": {"sync": {}}}}},
        {"devices": {"sda": 3}},
    ]
    for bad in damaged:
        assert part.from_json(bad) is None
    doc["devices"]["sda"]["calls"]["fsync"]["b"] = {"-1": 3}
    assert part.from_json(doc) is None


def test_metric_buckets_are_cumulative_and_exact() -> None:
    h = Histogram.of([8_000, 9_000, 1_000_000, 20_000_000_000])
    got = metric_buckets(h)
    assert got["8.192e-06"] == 1.0  # 8000 ns is under 8192 ns; 9000 is not
    assert got["1.6384e-05"] == 2.0
    assert got["+Inf"] == 4.0
    values = [v for k, v in got.items() if k not in ("+Inf", "sum")]
    assert values == sorted(values) and values[-1] == 3.0
    assert got["sum"] == pytest.approx(h.sum_ns / 1e9)


def test_journal_untraced_counts_the_kernels_transactions(tmp_path: Path) -> None:
    roots, sample, inventory, _ = world(tmp_path, journal_count=10)
    reader = Jbd2Part().reader(roots)
    first, _ = reader.read(ctx_of(roots, sample, inventory, None))
    assert isinstance(first, Jbd2Frame) and not first.traced
    assert first.devices["sda"].commits_per_s is None
    (roots.proc / "fs" / "jbd2" / "sda1-8" / "info").write_text("16 transactions (1 requested)\n")
    later = Sample(102.0, 3.0, sample.counters)
    second, _ = reader.read(ctx_of(roots, later, inventory, None, sample))
    assert isinstance(second, Jbd2Frame)
    assert second.devices["sda"].commits == 6
    doc = Jbd2Part().disk_json(second, "sda")["journal"]
    assert doc == {
        "commits_per_s": 3.0,
        "locked_us": None,
        "flushing_us": None,
        "logging_us": None,
        "running_ms": None,
    }


def test_journal_traced_phases_and_coarse_running_time(tmp_path: Path) -> None:
    roots, sample, inventory, _ = world(tmp_path)
    assert kernel_hz(roots) == 250
    tick = {
        "@jb_n": {f"{SDA1}": 2},
        "@jb_c": {f"{SDA1},0": 2, f"{SDA1},1": 2, f"{SDA1},2": 2, f"{SDA1},3": 2},
        "@jb_s": {f"{SDA1},0": 4_000, f"{SDA1},1": 100_000, f"{SDA1},2": 600_000, f"{SDA1},3": 3},
        "@jb_x": {f"{SDA1},0": 3_000, f"{SDA1},1": 90_000, f"{SDA1},2": 500_000, f"{SDA1},3": 2},
    }
    traced = merge_journal(parse_journal_maps(tick), parse_journal_maps(tick))
    part = Jbd2Part()
    reader = part.reader(roots)
    later = Sample(104.0, 5.0, sample.counters)
    value, _ = reader.read(ctx_of(roots, later, inventory, traced, sample))
    assert isinstance(value, Jbd2Frame) and value.traced
    doc = part.disk_json(value, "sda")["journal"]
    assert doc["commits_per_s"] == 1.0
    assert doc["locked_us"] == {"avg": 2.0, "max": 3.0}
    assert doc["logging_us"] == {"avg": 300.0, "max": 500.0}
    assert doc["running_ms"] == {"avg": 6.0, "max": 8, "coarse": True}  # 1.5 and 2 jiffies
    metrics = {(m.name, tuple(sorted(m.labels.items()))): m.value for m in part.metrics(value)}
    assert metrics[("iotop_plus_disk_journal_commits_total", (("device", "sda"),))] == 4.0
    key = ("iotop_plus_disk_journal_phase_seconds_total", (("device", "sda"), ("phase", "logging")))
    assert metrics[key] == pytest.approx(1.2e-3)
    assert part.from_json(json.loads(json.dumps(part.to_json(value)))) == value
    assert part.from_json({"devices": {"sda": {"commits": -1}}}) is None


def test_both_parts_are_registered_with_their_own_letters() -> None:
    sync, journal = registry.part("sync"), registry.part("jbd2")
    assert isinstance(sync, SyncPart) and isinstance(journal, Jbd2Part)
    assert (sync.letter, journal.letter) == ("Y", "J")
    assert sync.record_flag == journal.record_flag == "sync"
