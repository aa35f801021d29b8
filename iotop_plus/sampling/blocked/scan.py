"""The reader of blocked threads (:mod:`.blocked`): every thread now and then, the blocked
ones every frame.

- A **full scan** (every :data:`FULL_SCAN_S`, judged on the frames' monotonic time) finds
  every thread in ``D``. A thread changes state only by running, and running changes its
  ``/proc/PID/task/TID/schedstat`` (time on the CPU, time waiting for it, timeslices): so each
  thread's ``schedstat`` is read (a third of the cost of its ``stat``) and its ``stat`` only
  when ``schedstat`` changed since the last scan, or when the kernel keeps no such figures
  (``0 0 0``). A task directory is listed again only when its thread count changed (the
  directory's link count, from ``fstat`` of the held directory) or one of its threads went
  away.
- **Each frame** re-reads the state and ``schedstat`` of the threads seen blocked; what else
  is read about one (``wchan``, ``syscall``, ``stack``, its file and cgroup) is read when it is
  first seen and again only after it ran (its timeslice count changed), at most
  :data:`DETAILS_PER_FRAME` threads a frame (the others stay ``unknown`` until a later one).

On a live ``/proc`` the files read every scan stay open and are read again with ``pread`` (as
:mod:`.process_reader` does): a held file stays bound to its thread, and reads fail with
``ESRCH`` once it exits even if the number is reused. The cost is measured by
``benchmarks/bench_blocked.py`` (figures in the README, ``snapshot --blocked``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from dataclasses import dataclass, replace

from iotop_plus.roots import Roots
from iotop_plus.sampling.blocked.model import (
    BlockedTasks,
    BlockedThread,
    Syscall,
    classify,
    group,
    parse_stack,
    parse_syscall,
    syscall_names,
)
from iotop_plus.sampling.cgroups.names import task_cgroup
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.topology.blockdev import BlockDeviceNames, MountEntry, mountinfo_entries

FULL_SCAN_S = 2.0
"""How often every thread's state is read; a thread that blocks in between is found at the
next scan (so within two frames at the default 1 s interval)."""
_SCAN_EARLY = 0.9
"""A scan is due at this share of :data:`FULL_SCAN_S`: frames a second apart, one a few
milliseconds early, still scan every other frame."""
DETAILS_PER_FRAME = 256
"""Blocked threads whose wchan, syscall, stack, file and cgroup are read per frame."""
MAX_HELD = 8192
"""Files held open at most (and never more than a quarter of the descriptor limit)."""
_READ = 4096
_STACK_READ = 16384
_PF_KTHREAD = 0x00200000
_GONE = (errno.ENOENT, errno.ESRCH)

_NO_FIGURES = b"0 0 0\n"
"""``schedstat`` of a kernel that keeps no scheduler statistics."""


@dataclass
class _Process:
    """The held files of one process's threads, between scans (mutable, private)."""

    task_fd: int
    """Its held ``task`` directory (-1: not held)."""
    tids: list[int]
    """Its threads, the leader first."""
    fds: list[int]
    """Each thread's held ``schedstat`` (-1: not held)."""
    last: list[bytes]
    """Each thread's ``schedstat`` at the last scan (``b""``: its state must be read)."""
    relist: bool = False
    """A thread went away: list the directory again."""


@dataclass
class _Stuck:
    """What the reader keeps about one blocked thread (mutable, private)."""

    since: float
    """Monotonic time from which it has waited without running."""
    slices: int | None
    """Its timeslice count when last read."""
    seen: BlockedThread | None = None
    """What was read about it (None: not yet)."""


def _state(stat: bytes) -> tuple[bytes, int, bytes, int]:
    """``(state, num_threads, comm, flags)`` of a ``stat`` text (``proc(5)``: ``pid (comm) S
    ppid …``, the comm may hold spaces and parentheses: the last ``)`` ends it).

    Raises:
        ValueError: for a text that is not one.
    """
    close = stat.rfind(b")")
    open_ = stat.find(b"(")
    rest = stat[close + 2 :].split(b" ", 19)
    if open_ < 0 or close < open_ or len(rest) < 19:
        raise ValueError(f"not a /proc/PID/stat line: {stat[:120]!r}")
    return rest[0], int(rest[17]), stat[open_ + 1 : close], int(rest[6])


def _state_or_none(stat: bytes) -> bytes | None:
    try:
        return _state(stat)[0]
    except ValueError:
        return None


def _is_live(roots: Roots) -> bool:
    try:
        return os.readlink(roots.proc / "self") == str(os.getpid())
    except OSError:
        return False


def _held_budget() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_HELD
    return max(0, min(MAX_HELD, soft // 4))


class BlockedReader:
    """Reads the blocked threads of one source; one :class:`BlockedTasks` per frame.

    Args:
        roots: Where ``/proc`` is.
        root: Read as root (``syscall`` and ``stack``); by default, whether we are.
        machine: ``uname -m`` of the tree's kernel (syscall numbers); by default ours.
    """

    def __init__(self, roots: Roots, root: bool | None = None, machine: str | None = None) -> None:
        self.roots = roots
        self._proc = str(roots.proc)
        self.root = os.geteuid() == 0 if root is None else root
        self._syscalls = syscall_names(machine)
        self._live = _is_live(roots)
        self._budget = _held_budget() if self._live else 0
        self._held: dict[str, int] = {}
        self._processes: dict[int, _Process] = {}
        self._held_count = 0
        self._stuck: dict[tuple[int, int], _Stuck] = {}
        self._scanned_at = float("-inf")
        self._threads = 0
        self._names = BlockDeviceNames(roots)
        self._mounts: dict[int, MountEntry] | None = None
        self._mounts_read_at = float("-inf")

    # -- reading files ------------------------------------------------------------------

    def _read(self, rel: str, hold: bool, limit: int = _READ) -> bytes | None:
        """The bytes of ``PROC/rel``; None when it is gone or refused. ``hold``: keep it open
        for the next read (a live ``/proc`` only, within the budget)."""
        fd = self._held.get(rel)
        if fd is not None:
            try:
                return os.pread(fd, limit, 0)
            except OSError:
                del self._held[rel]
                os.close(fd)
                return None
        try:
            fd = os.open(f"{self._proc}/{rel}", os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            data = os.pread(fd, limit, 0)
        except OSError:
            os.close(fd)
            return None
        if hold and self._room():
            self._held[rel] = fd
        else:
            os.close(fd)
        return data

    def _room(self) -> bool:
        """Whether one more file may be held open."""
        return len(self._held) + self._held_count < self._budget

    def _forget(self, rel: str) -> None:
        fd = self._held.pop(rel, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Close every held file."""
        for fd in self._held.values():
            os.close(fd)
        self._held.clear()
        for process in self._processes.values():
            self._close(process)
        self._processes.clear()

    # -- the full scan ------------------------------------------------------------------

    def _scan(self) -> dict[tuple[int, int], bytes]:
        """Every thread in ``D`` now, with its ``stat`` text; counts the threads looked at."""
        found: dict[tuple[int, int], bytes] = {}
        threads = 0
        try:
            names = os.listdir(self._proc)
        except OSError:
            names = []
        alive = set()
        for name in names:
            if not name.isdigit():
                continue
            pid = int(name)
            process = self._processes.get(pid) or self._open(pid)
            if process is None:
                continue
            alive.add(pid)
            if process.relist or not process.tids:
                self._list(pid, process)
            ran = self._scan_threads(pid, process, found)
            # Only a thread of the process can start another, and it must run to do so.
            if ran and self._thread_count(process) != len(process.tids):
                self._list(pid, process)
                self._scan_threads(pid, process, found)
            threads += len(process.tids)
        for pid in [p for p in self._processes if p not in alive]:
            self._close(self._processes.pop(pid))
        self._threads = threads
        return found

    def _scan_threads(
        self, pid: int, process: _Process, found: dict[tuple[int, int], bytes]
    ) -> bool:
        """Look at the threads of ``pid`` (one that did not run since it was last looked at
        costs one ``pread``); whether any of them ran."""
        stuck = self._stuck
        ran = False
        for i in range(len(process.tids)):
            tid, fd = process.tids[i], process.fds[i]
            try:
                now = os.pread(fd, 128, 0) if fd >= 0 else self._read_path(pid, tid, "schedstat")
            except OSError:
                process.relist = ran = True
                continue
            if now == process.last[i] and (pid, tid) not in stuck:
                continue  # it has not run: its state is the one seen last time
            ran = True
            stat = self._read(f"{pid}/task/{tid}/stat", False)
            if stat is None:
                process.relist = True
                continue
            process.last[i] = now if now != _NO_FIGURES else b""
            if b") D " in stat and _state_or_none(stat) == b"D":
                found[pid, tid] = stat
        return ran

    def _read_path(self, pid: int, tid: int, name: str) -> bytes:
        fd = os.open(f"{self._proc}/{pid}/task/{tid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.pread(fd, 128, 0)
        finally:
            os.close(fd)

    def _open(self, pid: int) -> _Process | None:
        fd = -1
        if self._room():
            try:
                fd = os.open(
                    f"{self._proc}/{pid}/task", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
                )
            except OSError:
                return None
            self._held_count += 1
        process = self._processes[pid] = _Process(fd, [], [], [])
        return process

    def _thread_count(self, process: _Process) -> int:
        """Threads of the process: its task directory's links less ``.`` and its own (-1:
        not known)."""
        if process.task_fd < 0:
            return -1
        try:
            return os.fstat(process.task_fd).st_nlink - 2
        except OSError:
            return -1

    def _list(self, pid: int, process: _Process) -> None:
        """List the threads again, keeping the held files of those still there."""
        try:
            listed = os.listdir(
                process.task_fd if process.task_fd >= 0 else f"{self._proc}/{pid}/task"
            )
        except OSError:
            listed = []
        tids = sorted((int(n) for n in listed if n.isdigit()), key=lambda t: (t != pid, t))
        old = dict(zip(process.tids, zip(process.fds, process.last, strict=True), strict=True))
        fds, last = [], []
        for tid in tids:
            fd, seen = old.pop(tid, (-1, b""))
            if fd < 0 and self._room():
                try:
                    fd = os.open(
                        f"{self._proc}/{pid}/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC
                    )
                    self._held_count += 1
                except OSError:
                    fd = -1
            fds.append(fd)
            last.append(seen)
        for fd, _ in old.values():
            self._close_fd(fd)
        process.tids, process.fds, process.last, process.relist = tids, fds, last, False

    def _close_fd(self, fd: int) -> None:
        if fd >= 0:
            os.close(fd)
            self._held_count -= 1

    def _close(self, process: _Process) -> None:
        for fd in (process.task_fd, *process.fds):
            self._close_fd(fd)
        process.task_fd, process.fds = -1, [-1] * len(process.fds)

    # -- each frame ---------------------------------------------------------------------

    def read(self, ctx: ReadContext) -> tuple[BlockedTasks, tuple[object, ...]]:
        """This frame's blocked threads, grouped."""
        now = ctx.sample.monotonic
        if now - self._scanned_at >= FULL_SCAN_S * _SCAN_EARLY:
            stats = self._scan()
            self._scanned_at = now
            for key in [k for k in self._stuck if k not in stats]:
                self._drop(key)
        else:
            stats = {}
            for key in list(self._stuck):
                stat = self._read(f"{key[0]}/task/{key[1]}/stat", True)
                if stat is None:
                    self._drop(key)  # gone
                else:
                    stats[key] = stat
        threads = []
        budget = DETAILS_PER_FRAME
        for key, stat in stats.items():
            try:
                state, _, comm, flags = _state(stat)
            except ValueError:
                state = b"?"
            if state != b"D":
                self._drop(key)
                continue
            slices = self._slices(key)
            stuck = self._stuck.get(key)
            if stuck is None:
                stuck = self._stuck[key] = _Stuck(now, slices)
            elif slices is not None and slices != stuck.slices:
                stuck.since, stuck.slices, stuck.seen = now, slices, None
            if stuck.seen is None and budget > 0:
                budget -= 1
                stuck.seen = self._details(ctx, key, comm, bool(flags & _PF_KTHREAD))
            seen = stuck.seen or BlockedThread(
                key[0], key[1], os.fsdecode(comm), "unknown", None, None
            )
            threads.append(_aged(seen, now - stuck.since))
        groups, dropped = group(threads)
        value = BlockedTasks(
            groups=groups,
            threads=self._threads,
            scan_age_s=round(max(0.0, now - self._scanned_at), 1),
            root=self.root,
            dropped=dropped,
        )
        return value, ()

    def _drop(self, key: tuple[int, int]) -> None:
        self._stuck.pop(key, None)
        for name in ("stat", "schedstat"):
            self._forget(f"{key[0]}/task/{key[1]}/{name}")

    def _slices(self, key: tuple[int, int]) -> int | None:
        """The third field of ``schedstat`` (``proc(5)``: run ns, wait ns, timeslices)."""
        text = self._read(f"{key[0]}/task/{key[1]}/schedstat", True, 128)
        fields = text.split() if text is not None else []
        return int(fields[2]) if len(fields) == 3 and fields[2].isdigit() else None

    def _details(
        self, ctx: ReadContext, key: tuple[int, int], comm: bytes, kthread: bool
    ) -> BlockedThread:
        """Everything readable about one blocked thread."""
        pid, tid = key
        base = f"{pid}/task/{tid}/"
        refused = []
        raw = self._read(base + "wchan", False, 256)
        wait = raw.decode("utf-8", "surrogateescape").strip() if raw is not None else ""
        if wait in ("", "0"):
            wait_name = None
            refused.append("wait")
        else:
            wait_name = wait
        call = Syscall(None, None)
        stack: tuple[str, ...] = ()
        file = mount = device = disk = None
        if self.root:
            text = self._text(base + "syscall")
            if text is None:
                refused.append("syscall")
            else:
                with contextlib.suppress(ValueError):
                    call = parse_syscall(text, self._syscalls)
            stack_text = self._text(base + "stack", _STACK_READ)
            if stack_text is None:
                refused.append("stack")
            else:
                stack = parse_stack(stack_text)
            if kthread:
                call = Syscall(None, None)  # a kernel thread's registers are no call
            elif call.name is None and "exc_page_fault" in stack:
                call = Syscall("page fault", None)
            if call.fd is not None:
                file, where, seen = self._file(pid, call.fd)
                if not seen:
                    refused.append("file")
                if where is not None:
                    mount = where.mountpoint
                    device, disk = self._device(ctx, where)
        cgroup_text = self._text(base + "cgroup")
        cgroup = task_cgroup(cgroup_text)[0] if cgroup_text is not None else None
        return BlockedThread(
            pid=pid,
            tid=tid,
            comm=os.fsdecode(comm),
            reason=classify(stack, wait_name),
            wait=wait_name,
            syscall=call.name,
            file=file,
            mount=mount,
            device=device,
            disk=disk,
            cgroup=cgroup,
            refused=tuple(refused),
        )

    def _text(self, rel: str, limit: int = _READ) -> str | None:
        raw = self._read(rel, False, limit)
        return raw.decode("utf-8", "surrogateescape") if raw is not None else None

    def _file(self, pid: int, fd: int) -> tuple[str | None, MountEntry | None, bool]:
        """The path of ``pid``'s ``fd``, the mount it is on, and whether the kernel let us
        see them. Only ``readlink`` and ``fdinfo``: nothing that reaches the filesystem."""
        try:
            path = os.readlink(f"{self._proc}/{pid}/fd/{fd}")
        except OSError as err:
            return None, None, err.errno in _GONE
        info = self._text(f"{pid}/fdinfo/{fd}")
        mount_id = None
        for line in (info or "").splitlines():
            label, _, value = line.partition(":")
            if label == "mnt_id" and value.strip().isdigit():
                mount_id = int(value)
        where = self._mount(pid, mount_id) if mount_id is not None else None
        return path, where, True

    def _mount(self, pid: int, mount_id: int) -> MountEntry | None:
        """The mount with this id: from our mount table, else the thread's own (another
        namespace)."""
        mounts = self._mounts
        if mounts is None or mount_id not in mounts:
            mounts = self._mounts = _mount_table(self.roots, "self")
        found = mounts.get(mount_id)
        if found is None:
            found = _mount_table(self.roots, str(pid)).get(mount_id)
        return found

    def _device(self, ctx: ReadContext, where: MountEntry) -> tuple[str | None, str | None]:
        """The block device under a mount and its whole disk."""
        found = self._names.holder_of(os.makedev(where.major, where.minor))
        if found is None:
            return None, None
        device = found[0]
        entry = ctx.inventory.get(device)
        return device, (entry.parent if entry is not None and entry.parent else device)


def _mount_table(roots: Roots, pid: str) -> dict[int, MountEntry]:
    try:
        raw = (roots.proc / pid / "mountinfo").read_bytes()
    except OSError:
        return {}
    text = raw.decode("utf-8", "surrogateescape")
    return {e.mount_id: e for e in mountinfo_entries(text) if e.mount_id >= 0}


def _aged(thread: BlockedThread, waited_s: float) -> BlockedThread:
    return replace(thread, waited_s=max(0.0, waited_s))
