"""The hot-files part without a kernel: its map parser, merge, JSON, dirtiers, names and the
reader on a hand-built frame."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.files import part as files_part
from iotop_plus.sampling.files.dirtiers import DirtyWindow, window_s
from iotop_plus.sampling.files.model import frame_from_json, frame_to_json
from iotop_plus.sampling.files.names import FileNames, not_open
from iotop_plus.sampling.files.part import FilesPart, FilesReader
from iotop_plus.sampling.files.trace import (
    PAGE_SIZE,
    FileCounts,
    file_program,
    merge_counts,
    parser,
)
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.frame.registry import part
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory

SDA1 = (8 << 20) | 1
"""Kernel dev_t of sda1 (8:1)."""


def test_registered_with_its_key_letter_and_record_flag() -> None:
    got = part("files")
    assert isinstance(got, FilesPart)
    assert (got.letter, got.record_flag) == ("F", "files")


def test_program_refuses_a_rate_that_is_not_a_power_of_two() -> None:
    with pytest.raises(ValueError):
        file_program(6)
    assert "nsecs" not in file_program(1)
    assert ">> 61) == 0" in file_program(8) and ">> 62) == 0" in file_program(4)


def test_program_has_the_probes_of_the_groups_there_are() -> None:
    """A filesystem's probes only once its tracepoints exist (bpftrace refuses a program that
    names a missing one); XFS stamps its writes and counts its write-back like ext4."""
    ext4_only = file_program(8, {"ext4", "filemap", "sched"})
    assert "ext4_da_write_begin" in ext4_only and "xfs:" not in ext4_only
    assert "iomap:" not in ext4_only
    both = file_program(8)
    for probe in ("xfs:xfs_file_buffered_write", "iomap:iomap_add_to_ioend", "ext4_da_write_end"):
        assert probe in both
    assert "iomap_writeback_folio" not in both  # the whole folio's size, not the bytes written
    assert "@fi_in[tid] = (args->ino, $f, $l);" in both  # XFS stamps the call's whole range


def test_picked_is_the_same_hash_at_the_write_and_at_its_page_add() -> None:
    """The write's stamp and the page add's count decide on the same (page, inode), so a
    sampled-out write leaves no page that would be counted as a read; any stride of pages is
    counted about one in 8."""
    from iotop_plus.sampling.files.trace import GOLDEN, PAGE_SHIFT, picked

    assert picked("$p", "$i", 1) == "1"
    text = file_program(8)
    assert picked(f"args->pos >> {PAGE_SHIFT}", "args->ino", 8) in text  # ext4's write
    assert picked("$f", "args->ino", 8) in text  # XFS's write (its first page)
    assert picked("args->index", "args->i_ino", 8) in text  # the page add

    def counted(page: int, ino: int) -> bool:
        return (((page ^ ino) * GOLDEN) % (1 << 64)) >> 61 == 0

    for stride in (1, 2, 8, 64, 512):
        share = sum(counted(i * stride, 12) for i in range(8000)) / 8000
        assert 0.10 <= share <= 0.15, (stride, share)


def test_parse_reads_each_map_and_skips_bad_keys() -> None:
    program = parser(sample=8, map_keys=5)
    got = program.parse(
        {
            "@fi_rd": {f"{SDA1},12,100": 4096, "junk": 5, "1,2": 7, f"{SDA1},12,x": 1},
            "@fi_wr": {f"{SDA1},13,101": 8192},
            "@fi_wb": {f"{SDA1},13": 2 * PAGE_SIZE},
            "@fi_dio": {f"{SDA1},14,102,0": 65536, f"{SDA1},14,102,1": 4096},
            "@fi_ex": {"100": "cat", "x": "no"},
        }
    )
    assert isinstance(got, FileCounts)
    assert got.read == {(SDA1, 12, 100): 4096}
    assert got.dirtied == {(SDA1, 13, 101): 8192}
    assert got.written == {(SDA1, 13): 2 * PAGE_SIZE}
    assert got.direct_read == {(SDA1, 14, 102): 65536}
    assert got.direct_write == {(SDA1, 14, 102): 4096}
    assert got.exited == {100: "cat"}
    assert got.sample == 8 and not got.filled
    full = program.parse({"@fi_rd": {f"{SDA1},{i},1": 1 for i in range(5)}})
    assert isinstance(full, FileCounts) and full.filled


def test_merge_sums_ticks() -> None:
    a = FileCounts(read={(1, 2, 3): 10}, written={(1, 2): 5}, exited={3: "a"})
    b = FileCounts(read={(1, 2, 3): 1, (1, 2, 4): 2}, filled=True, exited={4: "b"})
    got = merge_counts(a, b)
    assert got.read == {(1, 2, 3): 11, (1, 2, 4): 2}
    assert got.written == {(1, 2): 5} and got.filled and got.exited == {3: "a", 4: "b"}
    assert merge_counts(None, a) is a and merge_counts(a, None) is a


def test_dirtiers_share_by_what_each_dirtied_and_forget_after_the_window() -> None:
    w = DirtyWindow(window=30)
    w.add(0.0, {(SDA1, 7, 1): 3000, (SDA1, 7, 2): 1000})
    assert w.share({(SDA1, 7): 400, (SDA1, 8): 10}) == {(SDA1, 7): {1: 300, 2: 100}}
    w.add(31.0, {(SDA1, 7, 2): 1000})
    assert w.share({(SDA1, 7): 400}) == {(SDA1, 7): {2: 400}}


def test_window_is_expire_plus_writeback(tmp_path: Path) -> None:
    vm = tmp_path / "sys" / "vm"
    vm.mkdir(parents=True)
    (vm / "dirty_expire_centisecs").write_text("3000\n")
    (vm / "dirty_writeback_centisecs").write_text("500\n")
    assert window_s(Roots(proc=tmp_path)) == 35.0
    (vm / "dirty_expire_centisecs").write_text("garbage\n")
    assert window_s(Roots(proc=tmp_path)) == 35.0


def _fd(proc: Path, pid: int, fd: int, target: Path) -> Path:
    d = proc / str(pid) / "fd"
    d.mkdir(parents=True, exist_ok=True)
    link = d / str(fd)
    link.symlink_to(target)
    return link


def test_names_come_from_open_descriptors_and_go_when_closed(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    data = tmp_path / "data.txt"
    data.write_text("x")
    st_ = data.stat()
    key = (os.major(st_.st_dev), os.minor(st_.st_dev), st_.st_ino)
    link = _fd(proc, 42, 3, data)
    names = FileNames(Roots(proc=proc))
    assert names.names([key], {key: [42]}) == {key: str(data)}
    link.unlink()  # closed: never a remembered path
    assert names.names([key], {key: [42]}) == {}
    assert not_open(12, "/mnt") == "inode 12 on /mnt (not open)"


def test_names_from_maps_match_device_and_inode(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "7").mkdir(parents=True)
    (proc / "7" / "maps").write_text(
        "7f00-7f10 r--p 00000000 08:01 99 /usr/lib/libfoo.so\n"
        "7f10-7f20 r--p 00000000 08:01 98 /usr/lib/libbar.so\n"
    )
    names = FileNames(Roots(proc=proc))
    assert names.names([(8, 1, 99)], {(8, 1, 99): [7]}) == {(8, 1, 99): "/usr/lib/libfoo.so"}


def _counters(name: str, major: int, minor: int, read_sectors: int, written: int) -> DiskCounters:
    values = [0] * 17
    values[2], values[6] = read_sectors, written
    return DiskCounters(major, minor, name, tuple(values), 17)


def _ctx(traced: object, tmp_path: Path, read_s: int, write_s: int) -> ReadContext:
    sda = BlockDevice("sda", 8, 0, "disk", partitions=("sda1",))
    sda1 = BlockDevice("sda1", 8, 1, "part", parent="sda", mounts=("/data",))
    before = Sample(0.0, 0.0, {"sda": _counters("sda", 8, 0, 0, 0)})
    after = Sample(
        1.0,
        1.0,
        {
            "sda": _counters("sda", 8, 0, read_s, write_s),
            "sda1": _counters("sda1", 8, 1, read_s, write_s),
        },
    )
    (tmp_path / "proc").mkdir(exist_ok=True)
    return ReadContext(
        Roots(proc=tmp_path / "proc"),
        after,
        before,
        Inventory({"sda": sda, "sda1": sda1}),
        frozenset({"files"}),
        traced=traced,
    )


def test_reader_lists_a_partitions_files_under_its_disk(tmp_path: Path) -> None:
    counts = FileCounts(
        read={(SDA1, 12, 100): 8192, (SDA1, 12, 101): 4096},
        dirtied={(SDA1, 13, 102): 10 * PAGE_SIZE},
        written={(SDA1, 13): 10 * PAGE_SIZE},
        exited={100: "gone-reader"},
    )
    with mock.patch.object(files_part.os, "geteuid", return_value=0):
        reader = FilesReader(Roots(proc=tmp_path / "proc"))
    (tmp_path / "proc" / "100").mkdir(parents=True)  # its pid reused by another process
    (tmp_path / "proc" / "100" / "comm").write_text("newcomer\n")
    ctx = _ctx(counts, tmp_path, read_s=(8192 + 4096 + 4096) // 512, write_s=20 * PAGE_SIZE // 512)
    value, events = reader.read(ctx)
    assert value is not None and events == ()
    assert set(value.devices) == {"sda"}
    sda = value.devices["sda"]
    assert [f.inode for f in sda.files] == [13, 12]  # busiest first
    first = sda.files[1]
    assert first.partition == "sda1" and first.path == "inode 12 on /data (not open)"
    assert [(p.pid, p.comm, p.read_bytes) for p in first.processes] == [
        (100, "gone-reader", 8192),
        (101, "?", 4096),
    ]
    assert sda.other_read_bytes == 4096 and sda.other_write_bytes == 10 * PAGE_SIZE
    assert [(d.pid, d.share) for d in sda.dirtiers] == [(102, 1.0)]
    doc = FilesPart().disk_json(value, "sda")
    assert [f["path"] for f in doc["files"]] == ["inode 13 on /data (not open)", first.path]
    assert doc["files"][1]["processes"][0] == {
        "pid": 100,
        "comm": "gone-reader",
        "read_bytes": 8192,
        "dirtied_bytes": 0,
        "direct_bytes": 0,
    }
    assert frame_from_json(frame_to_json(value)) == value
    again, _ = reader.read(ctx)  # the exporter's counters run on across frames
    assert again is not None and again.devices["sda"].files[1].totals == (16384 + 8192, 0, 0)
    top_one = FilesPart()
    top_one.export_top = 1
    assert {m.labels["path"] for m in top_one.metrics(again)} == {"inode 13 on /data (not open)"}
    metrics = list(FilesPart().metrics(again))
    assert {m.name for m in metrics} == {
        "iotop_plus_file_read_bytes_total",
        "iotop_plus_file_written_bytes_total",
        "iotop_plus_file_direct_bytes_total",
    }


def test_reader_without_counts_says_why(tmp_path: Path) -> None:
    with mock.patch.object(files_part.os, "geteuid", return_value=0):
        reader = FilesReader(Roots(proc=tmp_path / "proc"))
    ctx = _ctx(None, tmp_path, 0, 0)
    value, _ = reader.read(ctx)
    assert value is not None and not value.devices and value.note


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(json_values)
def test_from_json_never_raises_on_untrusted_documents(doc: object) -> None:
    frame_from_json(doc)
    frame_from_json({"devices": {"sda": doc}})
    frame_from_json({"devices": {"sda": {"files": [doc], "dirtiers": [doc], "files_other": doc}}})


def test_without_root_files_are_estimated_from_own_file_positions(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    data = tmp_path / "data.txt"
    data.write_bytes(b"x" * 100)
    _fd(proc, 42, 3, data)
    info = proc / "42" / "fdinfo"
    info.mkdir()
    (info / "3").write_text("pos:\t100\nflags:\t0100000\nmnt_id:\t1\n")
    st_ = data.stat()
    sda1 = (os.major(st_.st_dev), os.minor(st_.st_dev))
    with mock.patch.object(files_part.os, "geteuid", return_value=1000):
        reader = FilesReader(Roots(proc=proc))
    before = Sample(0.0, 0.0, {})
    now = Sample(1.0, 1.0, {"sdz1": DiskCounters(*sda1, "sdz1", (0,) * 17, 17)})
    ctx = ReadContext(
        Roots(proc=proc), now, before, Inventory({}), frozenset({"files"}), traced=None
    )
    with mock.patch(
        "iotop_plus.sampling.files.estimate.os.getuid", return_value=proc.stat().st_uid
    ):
        first, _ = reader.read(ctx)
        (info / "3").write_text("pos:\t4196\nflags:\t0100000\nmnt_id:\t1\n")
        second, _ = reader.read(ctx)
    assert first is not None and first.estimated and not first.devices
    assert second is not None and second.estimated and second.note == files_part.ESTIMATED_NOTE
    (entry,) = second.devices["sdz1"].files
    assert (entry.path, entry.read_bytes, entry.write_bytes) == (str(data), 4096, 0)
    assert FilesPart().disk_json(second, "sdz1")["files_estimated"] is True
