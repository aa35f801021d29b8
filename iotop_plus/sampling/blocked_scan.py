"""The reader of blocked threads (:mod:`.blocked`): every thread now and then, the blocked
ones every frame.

- A **full scan** (every :data:`FULL_SCAN_S`, judged on the frames' monotonic time) looks at
  every thread's state: ``/proc/PID/task/PID/stat`` for each process (its state and thread
  count), and for a process with more threads each other thread's. As root a thread's
  ``wchan`` is read first, and one sleeping in a wait that is always interruptible or idle
  (:data:`IDLE_WAITS`: futex, epoll, poll, pipe reads, idle kernel workers…) is not read
  further: its ``wchan`` costs a third of its ``stat``. A task directory is listed again only
  when its thread count changed or one of its threads went away.
- **Each frame** re-reads the state and ``schedstat`` of the threads seen blocked; what else
  is read about one (``wchan``, ``syscall``, ``stack``, its file and cgroup) is read when it is
  first seen and again only after it ran (its timeslice count changed), at most
  :data:`DETAILS_PER_FRAME` threads a frame (the others stay ``unknown`` until a later one).

On a live ``/proc`` the files read every scan stay open and are read again with ``pread`` (as
:mod:`.process_reader` does): a held file stays bound to its thread, and reads fail with
``ESRCH`` once it exits even if the number is reused. The cost is measured by
``benchmarks/bench_blocked.py`` (``docs/performance.md``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from dataclasses import dataclass, replace

from iotop_plus.roots import Roots
from iotop_plus.sampling.blockdev import BlockDeviceNames, MountEntry, mountinfo_entries
from iotop_plus.sampling.blocked import (
    BlockedTasks,
    BlockedThread,
    Syscall,
    classify,
    group,
    parse_stack,
    parse_syscall,
    syscall_names,
)
from iotop_plus.sampling.cgroup_names import task_cgroup
from iotop_plus.sampling.part import ReadContext

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

IDLE_WAITS = frozenset(
    {
        b"futex_wait_queue",
        b"futex_wait_queue_me",
        b"futex_do_wait",
        b"do_epoll_wait",
        b"ep_poll",
        b"poll_schedule_timeout",
        b"do_select",
        b"do_sys_poll",
        b"do_nanosleep",
        b"hrtimer_nanosleep",
        b"pipe_read",
        b"anon_pipe_read",
        b"pipe_write",
        b"anon_pipe_write",
        b"do_wait",
        b"kernel_wait4",
        b"sigsuspend",
        b"do_sigtimedwait",
        b"unix_stream_read_generic",
        b"unix_stream_data_wait",
        b"sk_wait_data",
        b"inet_csk_accept",
        b"wait_woken",
        b"worker_thread",
        b"rescuer_thread",
        b"smpboot_thread_fn",
        b"kthread_worker_fn",
        b"kthreadd",
        b"kjournald2",
        b"irq_thread",
        b"rcu_gp_kthread",
        b"rcu_gp_fqs_loop",
        b"rcu_tasks_one_gp",
        b"kswapd",
        b"kcompactd",
        b"khugepaged",
        b"watchdog",
        b"oom_reaper",
        b"io_wq_worker",
    }
)
"""Kernel functions whose sleeps are only ever interruptible (``S``) or idle (``I``): a thread
whose ``wchan`` names one is not blocked, and its ``stat`` is not read."""


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
        self._tids: dict[int, tuple[int, ...]] = {}
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
        if hold and len(self._held) < self._budget:
            self._held[rel] = fd
        else:
            os.close(fd)
        return data

    def _forget(self, rel: str) -> None:
        fd = self._held.pop(rel, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Close every held file."""
        for fd in self._held.values():
            os.close(fd)
        self._held.clear()

    # -- the full scan ------------------------------------------------------------------

    def _scan(self) -> dict[tuple[int, int], bytes]:
        """Every thread in ``D`` now, with its ``stat`` text; counts the threads looked at."""
        found: dict[tuple[int, int], bytes] = {}
        kept: set[str] = set()
        threads = 0
        try:
            names = os.listdir(self._proc)
        except OSError:
            names = []
        for name in names:
            if not name.isdigit():
                continue
            pid = int(name)
            rel = f"{name}/task/{name}/stat"
            stat = self._read(rel, True)
            if stat is None:
                continue
            kept.add(rel)
            threads += 1
            try:
                state, count, _, _ = _state(stat)
            except ValueError:
                continue
            if state == b"D":
                found[pid, pid] = stat
            if count <= 1:
                self._tids.pop(pid, None)
            else:
                threads += self._scan_threads(pid, count, found, kept)
        for rel in [r for r in self._held if r not in kept and "/schedstat" not in r]:
            self._forget(rel)
        self._threads = threads
        return found

    def _scan_threads(
        self, pid: int, count: int, found: dict[tuple[int, int], bytes], kept: set[str]
    ) -> int:
        """Look at the threads of ``pid`` but its leader; how many there were."""
        tids = self._tids.get(pid)
        if tids is None or len(tids) + 1 != count:
            tids = self._list_tids(pid)
        for tid in tids:
            base = f"{pid}/task/{tid}/"
            if self.root:
                wchan = self._read(base + "wchan", True, 128)
                if wchan is None:
                    self._tids.pop(pid, None)  # gone: list the task directory again
                    continue
                kept.add(base + "wchan")
                if wchan.partition(b".")[0] in IDLE_WAITS:
                    continue
                stat = self._read(base + "stat", False)
            else:
                stat = self._read(base + "stat", True)
                kept.add(base + "stat")
            if stat is None:
                self._tids.pop(pid, None)
            elif b") D " in stat and _state_or_none(stat) == b"D":
                found[pid, tid] = stat
        return len(tids)

    def _list_tids(self, pid: int) -> tuple[int, ...]:
        try:
            names = os.listdir(f"{self._proc}/{pid}/task")
        except OSError:
            names = []
        tids = tuple(int(n) for n in names if n.isdigit() and int(n) != pid)
        self._tids[pid] = tids
        return tids

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
                if stat is not None:
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
            elif slices is None or slices != stuck.slices:
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
        self._forget(f"{key[0]}/task/{key[1]}/schedstat")
        if key[0] != key[1] and self.root:
            # held only while blocked (the scan holds the leader's and, unprivileged, all)
            self._forget(f"{key[0]}/task/{key[1]}/stat")

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
            if call.name is None and not kthread and "exc_page_fault" in stack:
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
