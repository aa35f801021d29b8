"""Blocked tasks on canned /proc trees: parsing, the reason table, grouping, how long the oldest
waited, what is said when the kernel refuses, and hostile names (control characters in comm and
paths come out through ``printable``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.blocked.model import (
    MAX_PIDS,
    BlockedThread,
    classify,
    group,
    parse_stack,
    parse_syscall,
    syscall_names,
)
from iotop_plus.sampling.blocked.part import METRIC, BlockedPart
from iotop_plus.sampling.blocked.scan import FULL_SCAN_S, BlockedReader
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.topology.inventory import Inventory

X86 = syscall_names("x86_64")

FROZEN_STACK = """[<0>] percpu_rwsem_wait+0x15f/0x1d0
[<0>] vfs_write+0x3f0/0x450
[<0>] ksys_write+0x66/0xe0
[<0>] do_syscall_64+0x71/0x280
[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e
"""
MKDIR_STACK = """[<0>] percpu_rwsem_wait+0x15f/0x1d0
[<0>] mnt_want_write+0x96/0xc0
[<0>] filename_create+0x5d/0x170
[<0>] do_mkdirat+0x46/0x180
[<0>] __x64_sys_mkdir+0x45/0x80
"""
FSYNC_STACK = """[<0>] jbd2_log_wait_commit+0xb5/0x130
[<0>] ext4_sync_file+0x1c1/0x390
[<0>] __x64_sys_fsync+0x3b/0x70
"""
WRITE_SYSCALL = "1 0x3 0x561960a54680 0x1000 0x7efeb18374f0 0x0 0x0 0x7ffead9954c8 0x7efeb1916350"
MKDIR_SYSCALL = "83 0x7fffb1cf990a 0x1ff 0x0 0x7fe856627958 0x1ff 0x564cd58d3e00 0x7fff 0x7fe8"


@pytest.mark.parametrize(
    ("stack", "wait", "reason"),
    [
        (FROZEN_STACK, None, "frozen"),
        (MKDIR_STACK, None, "frozen"),
        (FSYNC_STACK, None, "journal"),
        (
            "[<0>] percpu_rwsem_wait+0x1/0x2\n[<0>] cgroup_procs_write_start+0x1/0x2\n",
            None,
            "other",
        ),
        ("", "percpu_rwsem_wait", "frozen"),
        ("", "folio_wait_bit_common", "page_io"),
        ("", "__mutex_lock.constprop.0", "other"),
        ("", None, "unknown"),
        # a journal commit stuck on a full queue is the queue's
        (
            "[<0>] blk_mq_get_tag+0x1/0x2\n[<0>] submit_bh_wbc+0x1/0x2\n"
            "[<0>] jbd2_journal_commit_transaction+0x1/0x2\n",
            None,
            "queue_full",
        ),
        # the journal thread waiting on its own buffer is the journal's
        (
            "[<0>] __wait_on_buffer+0x1/0x2\n[<0>] jbd2_journal_commit_transaction+0x1/0x2\n",
            None,
            "journal",
        ),
        (
            "[<0>] io_schedule_timeout+0x1/0x2\n[<0>] balance_dirty_pages+0x1/0x2\n",
            None,
            "writeback_throttle",
        ),
        ("[<0>] io_schedule+0x1/0x2\n[<0>] folio_wait_bit_common+0x1/0x2\n", None, "page_io"),
    ],
)
def test_the_reason_comes_from_the_stack_else_the_wait(
    stack: str, wait: str | None, reason: str
) -> None:
    assert classify(parse_stack(stack), wait) == reason


def test_stack_lines_that_are_not_frames_are_skipped() -> None:
    assert parse_stack("garbage\n[<0>] a.isra.0+0x1/0x2\n\n[<0>] \n") == ("a",)


def test_syscalls_name_their_descriptor_or_none() -> None:
    write = parse_syscall(WRITE_SYSCALL, X86)
    assert (write.name, write.fd) == ("write", 3)
    mkdir = parse_syscall(MKDIR_SYSCALL, X86)
    assert (mkdir.name, mkdir.fd) == ("mkdir", None)
    openat = parse_syscall("257 0xffffffffffffff9c 0x7ffd 0x0 0x0 0x0 0x0 0x7ff 0x7ff", X86)
    assert (openat.name, openat.fd) == ("openat", None)
    assert parse_syscall("running", X86).name is None
    assert parse_syscall("-1 0x7ffd 0x7ff", X86).name is None
    assert parse_syscall("451 0x1 0x0 0x0 0x0 0x0 0x0 0x7ff 0x7ff", X86).name == "syscall 451"
    # a descriptor argument that is no int is no file
    assert parse_syscall("0 0xffffffffffffffff 0x0 0x0 0x0 0x0 0x0 0x7 0x7", X86).fd is None
    for bad in ("", "1 0x3", "x 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8", "-1 0x1", "1 0xz 0 0 0 0 0 0 0"):
        with pytest.raises(ValueError, match="not a /proc/PID/syscall"):
            parse_syscall(bad, X86)


def _thread(tid: int, **kw: object) -> BlockedThread:
    base: dict[str, object] = {
        "pid": tid,
        "tid": tid,
        "comm": "w",
        "reason": "frozen",
        "wait": "percpu_rwsem_wait",
        "syscall": "write",
        "file": "/mnt/a",
        "mount": "/mnt",
        "device": "loop9",
        "disk": "loop9",
        "cgroup": "/a",
        "waited_s": 1.0,
    }
    base.update(kw)
    return BlockedThread(**base)  # type: ignore[arg-type]


def test_threads_group_by_reason_file_else_mount_and_cgroup() -> None:
    groups, dropped = group(
        [
            _thread(1, waited_s=5.0),
            _thread(2, pid=1),
            _thread(3, cgroup="/b"),
            _thread(4, file=None, syscall="mkdir", mount=None, device=None, disk=None),
            _thread(5, file=None, syscall="openat", mount=None, device=None, disk=None),
            _thread(6, reason="journal"),
        ]
    )
    assert dropped == 0
    by = {(g.reason, g.file, g.cgroup): g for g in groups}
    first = by["frozen", "/mnt/a", "/a"]
    assert (first.count, first.pids, first.oldest_s) == (2, (1,), 5.0)
    assert by["frozen", "/mnt/a", "/b"].count == 1
    paths = by["frozen", None, "/a"]
    assert paths.count == 2 and paths.file is None and paths.syscall == "mkdir"
    assert by["journal", "/mnt/a", "/a"].count == 1
    assert groups[0].count == 2  # most threads first


def test_a_group_lists_at_most_twenty_processes() -> None:
    groups, _ = group([_thread(t) for t in range(1, 60)])
    assert groups[0].count == 59 and len(groups[0].pids) == MAX_PIDS


# -- the reader on a canned tree ---------------------------------------------------------


class Tree:
    """A /proc and /sys tree with threads the test puts in any state."""

    def __init__(self, base: Path) -> None:
        self.proc = base / "proc"
        self.sys = base / "sys"
        (self.sys / "dev" / "block").mkdir(parents=True)
        os.symlink("../../devices/virtual/block/loop9", self.sys / "dev" / "block" / "7:9")
        (self.proc / "self").mkdir(parents=True)
        (self.proc / "self" / "mountinfo").write_text(
            "42 1 7:9 / /mnt/data rw,relatime shared:1 - ext4 /dev/loop9 rw\n"
        )
        self.roots = Roots(proc=self.proc, sys=self.sys)

    def thread(
        self,
        pid: int,
        tid: int,
        state: str = "D",
        comm: str = "writer",
        slices: int = 7,
        wchan: str = "percpu_rwsem_wait",
        syscall: str | None = WRITE_SYSCALL,
        stack: str | None = FROZEN_STACK,
        cgroup: str = "0::/app.slice\n",
        threads: int = 1,
    ) -> None:
        task = self.proc / str(pid) / "task" / str(tid)
        task.mkdir(parents=True, exist_ok=True)
        rest = " ".join(["0"] * 40)
        fields = rest.split()
        fields[17] = str(threads)  # num_threads
        line = f"{tid} ({comm}) {state} 1 " + " ".join(fields[1:])
        (task / "stat").write_bytes(os.fsencode(line) + b"\n")
        (task / "schedstat").write_text(f"100 200 {slices}\n")
        (task / "wchan").write_text(wchan)
        for name, text in (("syscall", syscall), ("stack", stack)):
            if text is None:
                (task / name).unlink(missing_ok=True)
            else:
                (task / name).write_text(text + "\n")
        (task / "cgroup").write_text(cgroup)

    def open_file(self, pid: int, fd: int, target: str | bytes, mnt_id: int = 42) -> None:
        (self.proc / str(pid) / "fd").mkdir(exist_ok=True)
        (self.proc / str(pid) / "fdinfo").mkdir(exist_ok=True)
        os.symlink(target, os.fsencode(self.proc / str(pid) / "fd" / str(fd)))
        (self.proc / str(pid) / "fdinfo" / str(fd)).write_text(
            f"pos:\t0\nflags:\t0100001\nmnt_id:\t{mnt_id}\nino:\t12\n"
        )


class Frames:
    """Frames of one reader on the tree, one frame-clock second apart."""

    def __init__(self, tree: Tree, root: bool = True) -> None:
        self.reader = BlockedReader(tree.roots, root=root, machine="x86_64")
        self.roots = tree.roots
        self.now = 1000.0

    def next(self, seconds: float = 1.0) -> dict[str, Any]:
        self.now += seconds
        sample = Sample(monotonic=self.now, wall_time=self.now, counters={})
        ctx = ReadContext(self.roots, sample, None, Inventory(), frozenset({"blocked"}))
        value, events = self.reader.read(ctx)
        assert events == ()
        self.value = value
        return dict(BlockedPart().entry_json(value))


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


def test_a_writer_on_a_frozen_filesystem_names_its_file_mount_and_device(tree: Tree) -> None:
    tree.thread(100, 100)
    tree.open_file(100, 3, "/mnt/data/table.db")
    tree.thread(200, 200, comm="mkdir", syscall=MKDIR_SYSCALL, stack=MKDIR_STACK)
    doc = Frames(tree).next()
    assert doc["blocked"] == [
        {
            "reason": "frozen",
            "wait": "percpu_rwsem_wait",
            "syscall": "write",
            "file": "/mnt/data/table.db",
            "mount": "/mnt/data",
            "device": "loop9",
            "cgroup": "/app.slice",
            "count": 1,
            "pids": [100],
            "oldest_s": 0.0,
            "comm": "writer",
            "disk": "loop9",
            "refused": [],
        },
        {
            "reason": "frozen",
            "wait": "percpu_rwsem_wait",
            "syscall": "mkdir",
            "file": None,
            "mount": None,
            "device": None,
            "cgroup": "/app.slice",
            "count": 1,
            "pids": [200],
            "oldest_s": 0.0,
            "comm": "mkdir",
            "disk": None,
            "refused": [],
        },
    ]


def test_the_oldest_wait_runs_only_while_the_thread_does_not_run(tree: Tree) -> None:
    tree.thread(100, 100)
    tree.open_file(100, 3, "/mnt/data/a")
    frames = Frames(tree)
    ages = [frames.next()["blocked"][0]["oldest_s"] for _ in range(3)]
    assert ages == [0.0, 1.0, 2.0]
    tree.thread(100, 100, slices=8)  # it ran in between, and blocked again
    assert frames.next()["blocked"][0]["oldest_s"] == 0.0
    assert frames.next()["blocked"][0]["oldest_s"] == 1.0


def test_a_thread_that_wakes_is_gone_at_the_next_frame(tree: Tree) -> None:
    tree.thread(100, 100)
    tree.open_file(100, 3, "/mnt/data/a")
    frames = Frames(tree)
    assert frames.next()["blocked"]
    tree.thread(100, 100, state="S", slices=8)
    assert frames.next()["blocked"] == []


def test_a_thread_that_blocks_is_found_at_the_next_full_scan(tree: Tree) -> None:
    tree.thread(100, 100, state="S", wchan="futex_do_wait", stack="")
    frames = Frames(tree)
    assert frames.next()["blocked"] == []
    tree.thread(100, 100, slices=9)  # ran, then blocked
    found = [bool(frames.next()["blocked"]) for _ in range(int(FULL_SCAN_S))]
    assert found[-1], "a full scan within two frames at 1 s"


def test_a_thread_that_did_not_run_is_not_read_again(tree: Tree) -> None:
    tree.thread(100, 100, state="S")
    frames = Frames(tree)
    frames.next()
    # Same schedstat: its state cannot have changed, so a D written behind its back is not
    # read (the kernel never shows that; this shows the stat is not read again).
    tree.thread(100, 100, state="D")
    assert [frames.next(FULL_SCAN_S)["blocked"] for _ in range(2)] == [[], []]


def test_threads_of_a_process_and_its_new_threads_are_scanned(tree: Tree) -> None:
    tree.thread(300, 300, state="S", threads=2)
    tree.thread(300, 301, state="S", threads=2)
    frames = Frames(tree)
    assert frames.next()["blocked"] == []
    tree.thread(300, 300, state="S", threads=3, slices=8)
    tree.thread(300, 302, threads=3, stack=FSYNC_STACK, syscall=None)
    groups = frames.next(FULL_SCAN_S)["blocked"]
    assert [(g["reason"], g["pids"], g["syscall"]) for g in groups] == [("journal", [300], None)]
    assert frames.value.threads == 3


def test_what_the_kernel_refuses_is_said_and_the_thread_still_counts(tree: Tree) -> None:
    tree.thread(1, 1, comm="init", wchan="0", syscall=None, stack=None)
    doc = Frames(tree).next()
    [entry] = doc["blocked"]
    assert entry["count"] == 1 and entry["reason"] == "unknown"
    assert entry["wait"] is None and entry["syscall"] is None
    assert entry["refused"] == ["stack", "syscall", "wait"]


def test_without_root_other_users_wait_is_null_and_nothing_more_is_read(tree: Tree) -> None:
    tree.thread(100, 100, wchan="0")
    tree.thread(101, 101, comm="mine", wchan="folio_wait_bit_common")
    frames = Frames(tree, root=False)
    groups = {g["comm"]: g for g in frames.next()["blocked"]}
    assert groups["writer"]["wait"] is None and groups["writer"]["reason"] == "unknown"
    assert groups["writer"]["refused"] == ["wait"]
    assert groups["mine"]["wait"] == "folio_wait_bit_common"
    assert groups["mine"]["reason"] == "page_io"
    assert groups["mine"]["syscall"] is None and groups["mine"]["file"] is None
    assert any("not root" in line for line in frames.value.notes())


def test_hostile_names_reach_json_printable_and_recordings_lossless(tree: Tree) -> None:
    comm = "ev\x1b]0;pwn\x07il) D (x"
    tree.thread(100, 100, comm=comm)
    tree.open_file(100, 3, b"/mnt/data/\x1b[31mred\xff\n.db")
    frames = Frames(tree)
    doc = frames.next()
    text = json.dumps(doc, ensure_ascii=False)
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)
    [entry] = doc["blocked"]
    assert entry["file"] == "/mnt/data/\\x1b[31mred\\xff\\x0a.db"
    assert entry["comm"] == "ev\\x1b]0;pwn\\x07il) D (x"
    part = BlockedPart()
    recorded = json.loads(json.dumps(part.to_json(frames.value), ensure_ascii=True))
    again = part.from_json(recorded)
    assert again == frames.value


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        {"groups": "x"},
        {"groups": [{"reason": "nope"}], "threads": 1, "scan_age_s": 0},
        {"groups": [], "threads": -1, "scan_age_s": 0},
        {"groups": [], "threads": 1, "scan_age_s": float("nan")},
        {"groups": [], "threads": True, "scan_age_s": 0},
        {
            "groups": [
                {"reason": "frozen", "count": 1, "pids": ["1"], "oldest_s": 0, "file": None}
            ],
            "threads": 1,
            "scan_age_s": 0,
        },
        {
            "groups": [{"reason": "frozen", "count": 1, "pids": [1], "oldest_s": 0, "file": 7}],
            "threads": 1,
            "scan_age_s": 0,
        },
    ],
)
def test_a_recorded_document_that_is_not_one_is_refused(doc: object) -> None:
    assert BlockedPart().from_json(doc) is None


def test_the_metric_counts_threads_by_device_and_reason(tree: Tree) -> None:
    tree.thread(100, 100)
    tree.open_file(100, 3, "/mnt/data/a")
    tree.thread(101, 101)
    tree.open_file(101, 3, "/mnt/data/b")
    tree.thread(102, 102, wchan="0", syscall=None, stack=None)
    frames = Frames(tree)
    frames.next()
    found = {
        (m.labels["device"], m.labels["reason"]): m.value
        for m in BlockedPart().metrics(frames.value)
    }
    assert found == {("loop9", "frozen"): 2, ("", "unknown"): 1}
    assert {m.name for m in BlockedPart().metrics(frames.value)} == {METRIC}
