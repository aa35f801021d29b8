"""Who is stuck, and on what: threads in uninterruptible sleep (state ``D``), grouped.

The value of the ``blocked`` frame part (:mod:`.blocked_part`; the reader is
:mod:`.blocked_scan`). What each thread shows, and where it comes from:

- ``wait``: ``/proc/PID/task/TID/wchan``, the kernel function it sleeps in. The kernel prints
  ``0`` for a thread that is not ours to inspect (another user's, without root; PID 1 here
  even for root): then ``wait`` is null and the thread still counts.
- ``syscall``: ``/proc/PID/task/TID/syscall`` (root), the call it is in (number, six
  arguments, stack and instruction pointers; ``-1 …`` outside a call, ``running``). A call
  on a descriptor names its file (``/proc/PID/fd/N``) and the mount it is on
  (``/proc/PID/fdinfo/N``'s ``mnt_id``, matched in mountinfo): no file is touched, so a hung
  filesystem cannot hang the reader. A call on a path (``openat``, ``mkdir``…) has
  ``file: null`` and its name: the path lives in the thread's memory, which we never read.
- ``stack``: ``/proc/PID/task/TID/stack`` (root), one ``[<0>] function+0xOFF/0xLEN`` per line,
  innermost first. The reason is read from its function names (:data:`REASON_FUNCTIONS`;
  without the stack, from ``wait`` alone). The first reason in :data:`REASONS` whose
  functions appear anywhere in the stack wins: the most specific cause of the wait (a journal
  commit stuck on a full device queue is ``queue_full``; the journal thread waiting on its own
  buffer is ``journal``, not ``page_io``):

  ==================== =========================================================
  reason               functions
  ==================== =========================================================
  ``frozen``           ``percpu_rwsem_wait`` under a write entry (``vfs_write``,
                       ``mnt_want_write``, ``*_page_mkwrite``, ``do_truncate``…):
                       the superblock's write lock that ``fsfreeze -f`` takes
  ``queue_full``       ``blk_mq_get_tag`` (no free request), ``blk_queue_enter``
  ``writeback_throttle`` ``balance_dirty_pages``, ``wbt_wait``
  ``cgroup_throttle``  ``blkcg_maybe_throttle_current``, ``ioc_rqos_throttle``,
                       ``blkcg_iolatency_throttle``
  ``journal``          jbd2 (``jbd2_log_wait_commit``, ``start_this_handle``,
                       ``wait_transaction_locked``, ``jbd2_journal_commit_transaction``…),
                       XFS log (``xlog_wait``, ``xfs_log_force``…), btrfs commits
  ``page_io``          ``folio_wait_bit_common``, ``__folio_lock``,
                       ``folio_wait_writeback``, ``__wait_on_buffer``,
                       ``blk_io_schedule`` (direct I/O), ``io_schedule``
  ``other``            any other uninterruptible wait (a mutex, a network filesystem…)
  ``unknown``          neither the stack nor the wait could be read
  ==================== =========================================================

  From ``wait`` alone a ``percpu_rwsem_wait`` counts as ``frozen``: the other users of such
  locks (CPU hotplug, cgroup migration) hold them for microseconds.

Threads are grouped by reason, file (else mount) and cgroup; a group counts its threads, keeps
up to :data:`MAX_PIDS` of their processes, and how long its oldest has waited: from when it
was first seen blocked, restarting whenever the thread ran in between (its
``/proc/PID/task/TID/schedstat`` third field, the count of timeslices, changed). Every name
goes through :func:`~iotop_plus.sampling.disks.diskstats.printable` when shown or written as JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from iotop_plus.text import printable

MAX_PIDS = 20
"""Processes listed per group (``pids``)."""
MAX_GROUPS = 100
"""Groups kept per frame (the largest first); the rest are summed in ``BlockedTasks.dropped``."""

REASONS = (
    "frozen",
    "queue_full",
    "writeback_throttle",
    "cgroup_throttle",
    "journal",
    "page_io",
    "other",
    "unknown",
)
"""Every reason, most specific first (the order a stack is judged in)."""

REASON_TEXT: Mapping[str, str] = {
    "frozen": "frozen filesystem",
    "queue_full": "device queue full",
    "writeback_throttle": "writeback throttling",
    "cgroup_throttle": "cgroup I/O throttling",
    "journal": "journal commit",
    "page_io": "page I/O",
    "other": "other kernel wait",
    "unknown": "not visible",
}
"""Each reason in plain words."""

_WRITE_ENTRIES = frozenset(
    {
        "vfs_write",
        "vfs_writev",
        "vfs_iter_write",
        "vfs_fallocate",
        "vfs_truncate",
        "do_truncate",
        "do_sys_ftruncate",
        "vfs_copy_file_range",
        "do_splice_direct",
        "mnt_want_write",
        "mnt_want_write_file",
        "file_start_write",
        "kiocb_start_write",
        "sb_start_write",
        "__sb_start_write",
        "sb_start_pagefault",
        "sb_start_intwrite",
        "do_page_mkwrite",
        "filemap_page_mkwrite",
        "ext4_page_mkwrite",
        "xfs_filemap_page_mkwrite",
        "iomap_page_mkwrite",
        "btrfs_page_mkwrite",
        "filename_create",
        "do_unlinkat",
        "do_rmdir",
        "do_renameat2",
        "ext4_evict_inode",
        "ovl_want_write",
    }
)
"""Functions that take a superblock's write lock (the one a freeze holds)."""
_FREEZE_WAITS = frozenset({"percpu_rwsem_wait", "percpu_down_read", "__percpu_down_read"})

REASON_FUNCTIONS: Mapping[str, frozenset[str]] = {
    "queue_full": frozenset({"blk_mq_get_tag", "blk_queue_enter", "bio_queue_enter"}),
    "writeback_throttle": frozenset(
        {"balance_dirty_pages", "balance_dirty_pages_ratelimited_flags", "wbt_wait"}
    ),
    "cgroup_throttle": frozenset(
        {"blkcg_maybe_throttle_current", "ioc_rqos_throttle", "blkcg_iolatency_throttle"}
    ),
    "journal": frozenset(
        {
            "jbd2_log_wait_commit",
            "jbd2_complete_transaction",
            "jbd2_journal_force_commit",
            "jbd2_journal_force_commit_nested",
            "wait_transaction_locked",
            "wait_transaction_switching",
            "start_this_handle",
            "add_transaction_credits",
            "jbd2_journal_lock_updates",
            "jbd2_journal_wait_updates",
            "jbd2_journal_commit_transaction",
            "__jbd2_log_wait_for_space",
            "jbd2_log_do_checkpoint",
            "kjournald2",
            "xlog_wait",
            "xlog_wait_on_iclog",
            "xfs_log_force",
            "xfs_log_force_seq",
            "xlog_cil_force_seq",
            "xlog_grant_head_wait",
            "btrfs_commit_transaction",
            "wait_for_commit",
            "wait_current_trans",
            "btrfs_sync_log",
        }
    ),
    "page_io": frozenset(
        {
            "folio_wait_bit_common",
            "folio_wait_bit",
            "folio_wait_bit_killable",
            "folio_wait_writeback",
            "folio_wait_stable",
            "folio_wait_locked",
            "__folio_lock",
            "__folio_lock_killable",
            "__folio_lock_or_retry",
            "wait_on_page_bit_common",
            "__lock_page",
            "__lock_page_killable",
            "wait_on_page_writeback",
            "__wait_on_buffer",
            "out_of_line_wait_on_bit",
            "bit_wait_io",
            "__filemap_fdatawait_range",
            "filemap_fdatawait_keep_errors",
            "submit_bio_wait",
            "blk_io_schedule",
            "__blkdev_direct_IO_simple",
            "__iomap_dio_rw",
            "io_schedule",
            "io_schedule_timeout",
        }
    ),
}
"""The functions that name each reason but ``frozen``, ``other`` and ``unknown``."""


def function_name(symbol: str) -> str:
    """``percpu_rwsem_wait`` of ``percpu_rwsem_wait+0x15f/0x1d0`` or of a compiler clone
    (``poll_schedule_timeout.constprop.0``)."""
    return symbol.partition("+")[0].partition(".")[0].strip()


def parse_stack(text: str) -> tuple[str, ...]:
    """The function names of ``/proc/PID/task/TID/stack``, innermost first.

    Format: one ``[<ADDR>] symbol+0xOFF/0xLEN`` per line (the address is ``0`` unless
    ``kptr_restrict`` allows it); lines that are not so are skipped.
    """
    out = []
    for line in text.splitlines():
        _, sep, symbol = line.partition("] ")
        name = function_name(symbol) if sep else ""
        if name:
            out.append(name)
    return tuple(out)


def classify(stack: Iterable[str], wait: str | None = None) -> str:
    """The reason of one blocked thread from its stack's function names (innermost first),
    else from its ``wait`` alone; see the module's table."""
    names = frozenset(stack)
    from_wait = not names
    if from_wait:
        if wait is None:
            return "unknown"
        names = frozenset({function_name(wait)})
    if names & _FREEZE_WAITS and (from_wait or names & _WRITE_ENTRIES):
        return "frozen"
    for reason, functions in REASON_FUNCTIONS.items():
        if names & functions:
            return reason
    return "other"


# Syscall numbers by architecture: the file calls a blocked thread may be in, and a few
# others worth naming. x86_64: arch/x86/entry/syscalls/syscall_64.tbl; the generic table
# (arm64, riscv64, loongarch): include/uapi/asm-generic/unistd.h.
_X86_64 = {
    0: "read", 1: "write", 2: "open", 3: "close", 4: "stat", 5: "fstat", 6: "lstat",
    8: "lseek", 9: "mmap", 16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv",
    20: "writev", 21: "access", 26: "msync", 40: "sendfile", 59: "execve", 60: "exit",
    72: "fcntl", 73: "flock", 74: "fsync", 75: "fdatasync", 76: "truncate", 77: "ftruncate",
    78: "getdents", 80: "chdir", 81: "fchdir", 82: "rename", 83: "mkdir", 84: "rmdir",
    85: "creat", 86: "link", 87: "unlink", 88: "symlink", 89: "readlink", 90: "chmod",
    91: "fchmod", 92: "chown", 93: "fchown", 94: "lchown", 132: "utime", 133: "mknod",
    137: "statfs", 138: "fstatfs", 162: "sync", 165: "mount", 166: "umount2",
    188: "setxattr", 190: "fsetxattr", 191: "getxattr", 193: "fgetxattr", 202: "futex",
    208: "io_getevents", 209: "io_submit", 217: "getdents64", 221: "fadvise64",
    231: "exit_group", 257: "openat", 258: "mkdirat", 259: "mknodat", 260: "fchownat",
    262: "newfstatat", 263: "unlinkat", 264: "renameat", 265: "linkat", 266: "symlinkat",
    267: "readlinkat", 268: "fchmodat", 269: "faccessat", 275: "splice",
    277: "sync_file_range", 280: "utimensat", 285: "fallocate", 295: "preadv",
    296: "pwritev", 306: "syncfs", 316: "renameat2", 326: "copy_file_range", 327: "preadv2",
    328: "pwritev2", 332: "statx", 426: "io_uring_enter", 437: "openat2", 439: "faccessat2",
}  # fmt: skip
_GENERIC = {
    2: "io_submit", 4: "io_getevents", 5: "setxattr", 7: "fsetxattr", 8: "getxattr",
    10: "fgetxattr", 25: "fcntl", 29: "ioctl", 32: "flock", 33: "mknodat", 34: "mkdirat",
    35: "unlinkat", 36: "symlinkat", 37: "linkat", 38: "renameat", 39: "umount2", 40: "mount",
    43: "statfs", 44: "fstatfs", 45: "truncate", 46: "ftruncate", 47: "fallocate",
    48: "faccessat", 49: "chdir", 50: "fchdir", 53: "fchmodat", 54: "fchownat", 56: "openat",
    57: "close", 61: "getdents64", 62: "lseek", 63: "read", 64: "write", 65: "readv",
    66: "writev", 67: "pread64", 68: "pwrite64", 69: "preadv", 70: "pwritev", 71: "sendfile",
    76: "splice", 78: "readlinkat", 79: "newfstatat", 80: "fstat", 81: "sync", 82: "fsync",
    83: "fdatasync", 84: "sync_file_range", 88: "utimensat", 93: "exit", 94: "exit_group",
    98: "futex", 221: "execve", 222: "mmap", 223: "fadvise64", 227: "msync", 267: "syncfs",
    276: "renameat2", 285: "copy_file_range", 286: "preadv2", 287: "pwritev2", 291: "statx",
    426: "io_uring_enter", 437: "openat2", 439: "faccessat2",
}  # fmt: skip
SYSCALL_TABLES: Mapping[str, Mapping[int, str]] = {
    "x86_64": _X86_64,
    "aarch64": _GENERIC,
    "riscv64": _GENERIC,
    "loongarch64": _GENERIC,
}
"""Syscall names by ``uname -m``."""

_ON_FIRST_ARGUMENT = (
    "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
    "preadv2", "pwritev2", "fsync", "fdatasync", "ftruncate", "fallocate",
    "sync_file_range", "syncfs", "getdents", "getdents64", "fstat", "fstatfs", "fchmod",
    "fchown", "fadvise64", "flock", "fcntl", "ioctl", "lseek", "close", "fsetxattr",
    "fgetxattr", "sendfile", "fchdir",
)  # fmt: skip
_FD_ARGUMENT = {
    **dict.fromkeys(_ON_FIRST_ARGUMENT, 0),
    "copy_file_range": 2,
    "splice": 2,
    "mmap": 4,
}
"""The argument that holds the file descriptor, for calls on one (the written one where a
call has two)."""


def syscall_names(machine: str | None = None) -> Mapping[int, str]:
    """The syscall table of this machine (``uname -m``); empty for one not listed."""
    return SYSCALL_TABLES.get(machine or os.uname().machine, {})


@dataclass(frozen=True, slots=True)
class Syscall:
    """What ``/proc/PID/task/TID/syscall`` says a thread is doing."""

    name: str | None
    """The call's name (``write``, ``syscall 451`` when not in the table); None outside a
    call (a kernel thread, a page fault) or while running."""
    fd: int | None
    """The descriptor the call works on, for calls on one."""


def parse_syscall(text: str, table: Mapping[int, str]) -> Syscall:
    """Parse ``/proc/PID/task/TID/syscall``.

    Formats (``proc(5)``): ``NR ARG1 … ARG6 SP PC`` (decimal number, hex arguments) in a call;
    ``-1 SP PC`` blocked outside one; ``running``.

    Raises:
        ValueError: quoting the text, when it is none of these.
    """
    fields = text.split()
    if fields == ["running"]:
        return Syscall(None, None)
    try:
        number = int(fields[0])
        if number < 0:
            if len(fields) != 3:
                raise ValueError
            return Syscall(None, None)
        if len(fields) != 9:
            raise ValueError
        name = table.get(number, f"syscall {number}")
        where = _FD_ARGUMENT.get(name)
        fd = int(fields[1 + where], 16) if where is not None else None
    except (ValueError, IndexError):
        raise ValueError(f"not a /proc/PID/syscall text: {text[:120]!r}") from None
    # A descriptor is an int; AT_FDCWD and garbage are not files.
    return Syscall(name, fd if fd is not None and 0 <= fd < 2**31 else None)


@dataclass(frozen=True, slots=True)
class BlockedThread:
    """One thread seen in ``D``, with what could be read about it."""

    pid: int
    """Its process (thread group)."""
    tid: int
    """The thread."""
    comm: str
    """Its name (raw: shown through ``printable``)."""
    reason: str
    """One of :data:`REASONS`."""
    wait: str | None
    """Its ``wchan``; None when the kernel hides it."""
    syscall: str | None
    """The call it is blocked in; None outside a call or when refused."""
    file: str | None = None
    """The file the call works on (``/proc/PID/fd/N``'s target); None otherwise."""
    mount: str | None = None
    """Where that file's filesystem is mounted."""
    device: str | None = None
    """The block device under that filesystem (may be a partition)."""
    disk: str | None = None
    """``device``'s whole disk (``device`` itself when not a partition)."""
    cgroup: str | None = None
    """Its cgroup path."""
    waited_s: float = 0.0
    """How long it has been seen blocked without running."""
    refused: tuple[str, ...] = ()
    """What the kernel would not show of it (``wait``, ``syscall``, ``stack``, ``file``)."""


@dataclass(frozen=True, slots=True)
class BlockedGroup:
    """Blocked threads with the same reason, file (else mount) and cgroup."""

    reason: str
    """One of :data:`REASONS`."""
    wait: str | None
    """The oldest thread's ``wchan`` (None: hidden)."""
    syscall: str | None
    """The oldest thread's call."""
    file: str | None
    """The file the threads are blocked on; None for path calls, or when not known."""
    mount: str | None
    """Its mount point (or the mount the threads wait on)."""
    device: str | None
    """The block device under it."""
    cgroup: str | None
    """The threads' cgroup."""
    count: int
    """Threads in the group."""
    pids: tuple[int, ...]
    """Their processes, oldest first, at most :data:`MAX_PIDS`."""
    oldest_s: float
    """How long the oldest has waited (see the module docstring), seconds."""
    comm: str = ""
    """The oldest thread's name."""
    disk: str | None = None
    """``device``'s whole disk (for the verdict of that disk)."""
    refused: tuple[str, ...] = ()
    """What the kernel would not show of some of them."""

    def as_json(self, raw: bool = False) -> dict[str, Any]:
        """One ``blocked[]`` entry, every name printable; ``raw``: names as read (a
        recording keeps them losslessly)."""

        def text(value: str | None) -> str | None:
            return value if value is None or raw else printable(value)

        return {
            "reason": self.reason,
            "wait": text(self.wait),
            "syscall": text(self.syscall),
            "file": text(self.file),
            "mount": text(self.mount),
            "device": text(self.device),
            "cgroup": text(self.cgroup),
            "count": self.count,
            "pids": list(self.pids),
            "oldest_s": self.oldest_s,
            "comm": text(self.comm),
            "disk": text(self.disk),
            "refused": list(self.refused),
        }

    def on(self, device: str) -> bool:
        """True when the group's file or mount lives on ``device`` (or a partition of it)."""
        return device in (self.device, self.disk)


@dataclass(frozen=True)
class BlockedTasks:
    """Every blocked thread of one frame, grouped; the ``blocked`` part's value."""

    groups: tuple[BlockedGroup, ...]
    """The groups, most threads first."""
    threads: int
    """Threads the last full scan looked at."""
    scan_age_s: float
    """How long ago that scan was (threads that blocked since are found at the next)."""
    root: bool
    """Read as root (``syscall``, ``stack`` and every ``wait`` readable)."""
    dropped: int = 0
    """Blocked threads in groups past :data:`MAX_GROUPS`."""

    @property
    def count(self) -> int:
        """Blocked threads."""
        return sum(g.count for g in self.groups) + self.dropped

    def on(self, device: str) -> tuple[BlockedGroup, ...]:
        """The groups blocked on ``device`` (its own filesystems or its partitions')."""
        return tuple(g for g in self.groups if g.on(device))

    def notes(self) -> tuple[str, ...]:
        """What could not be seen, one line each."""
        out = []
        if not self.root:
            out.append(
                "not root: syscall, file and stack are not read; other users' wait is hidden"
            )
        hidden = sum(g.count for g in self.groups if self.root and g.refused)
        if hidden:
            what = sorted({r for g in self.groups for r in g.refused})
            out.append(f"the kernel refused {', '.join(what)} of {hidden} blocked threads")
        if self.dropped:
            out.append(f"{self.dropped} more blocked threads in groups past the first {MAX_GROUPS}")
        return tuple(out)


def group(threads: Iterable[BlockedThread]) -> tuple[tuple[BlockedGroup, ...], int]:
    """Group blocked threads by reason, file (else mount) and cgroup; the groups, most threads
    first (then oldest first), at most :data:`MAX_GROUPS`, and the threads past them."""
    by_key: dict[tuple[str, str | None, str | None, str | None], list[BlockedThread]] = {}
    for thread in threads:
        where = thread.file if thread.file is not None else None
        key = (thread.reason, where, thread.mount if where is None else None, thread.cgroup)
        by_key.setdefault(key, []).append(thread)
    groups = []
    for members in by_key.values():
        members.sort(key=lambda t: (-t.waited_s, t.tid))
        oldest = members[0]
        pids: list[int] = []
        for member in members:
            if member.pid not in pids:
                pids.append(member.pid)
        refused = sorted({r for m in members for r in m.refused})
        groups.append(
            BlockedGroup(
                reason=oldest.reason,
                wait=oldest.wait,
                syscall=oldest.syscall,
                file=oldest.file,
                mount=oldest.mount,
                device=oldest.device,
                cgroup=oldest.cgroup,
                count=len(members),
                pids=tuple(pids[:MAX_PIDS]),
                oldest_s=round(oldest.waited_s, 1),
                comm=oldest.comm,
                disk=oldest.disk,
                refused=tuple(refused),
            )
        )
    groups.sort(key=lambda g: (-g.count, -g.oldest_s, g.reason, g.pids))
    kept = groups[:MAX_GROUPS]
    return tuple(kept), sum(g.count for g in groups[MAX_GROUPS:])
