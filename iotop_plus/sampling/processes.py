"""Per-process I/O, iotop's way, from /proc: immutable samples and a pure rates function.

Kernel formats read (proc(5)):

* ``/proc/PID/io``: ``name: value`` lines; ``rchar``, ``wchar``, ``syscr``, ``syscw``,
  ``read_bytes``, ``write_bytes``, ``cancelled_write_bytes``. Only root (or the owner)
  may read it; others get EACCES.
* ``/proc/PID/stat`` and ``/proc/PID/task/TID/stat``: ``pid (comm) state ...``; comm may
  hold spaces and parentheses, so fields are counted after the *last* ``)``. Field 20 is
  num_threads, 22 starttime (clock ticks since boot), 42 delayacct_blkio_ticks (2.6.18+).
  Field 42 of ``/proc/PID/stat`` is the main thread's only, so IO wait is summed over
  ``/proc/PID/task/*/stat``.

A process is identified by ``(pid, starttime)``, so a PID reused by a new process is a new
process. On a live /proc the reader keeps ``/proc/PID/io`` open between samples: a held
file stays bound to its process (reads fail with ESRCH once it exits, even if the PID is
reused), and ``pread`` of a held file costs a third of open+read+close.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import resource
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from iotop_plus.roots import Roots
from iotop_plus.sampling.delayacct import DelayAcct, read_delayacct

USER_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""Clock ticks per second of starttime and delayacct_blkio_ticks (100 on Linux)."""

NOT_READABLE_HINT = "run as root"

TaskKey = tuple[int, int]
"""``(pid or tid, starttime)``: one process (or thread) for its whole life."""

_EMPTY: Mapping[TaskKey, TaskCounters] = MappingProxyType({})
_CONTROL_TO_SPACE = bytes(32 if b < 32 or b == 127 else b for b in range(256))
_GONE = (errno.ENOENT, errno.ESRCH)
_DENIED = (errno.EACCES, errno.EPERM)
# Fields after "pid (comm) ": index = field number - 3.
_STATE, _NUM_THREADS, _STARTTIME, _BLKIO_TICKS = 0, 17, 19, 39


@dataclass(frozen=True, slots=True)
class IoCounters:
    """The cumulative counters of ``/proc/PID/io``, in bytes (``sys*`` in calls)."""

    rchar: int
    """Bytes asked for by read-like syscalls, page-cache hits included."""
    wchar: int
    """Bytes passed to write-like syscalls, whether or not they reach a disk."""
    syscr: int
    """Read-like syscalls."""
    syscw: int
    """Write-like syscalls."""
    read_bytes: int
    """Bytes this task caused to be fetched from storage (counted at submission)."""
    write_bytes: int
    """Bytes this task caused to be sent to storage (counted when pages are dirtied)."""
    cancelled_write_bytes: int
    """Dirtied bytes later truncated before write-back (they never reach the disk)."""

    @property
    def disk_write_bytes(self) -> int:
        """``write_bytes - cancelled_write_bytes``: what iotop shows as DISK WRITE."""
        return self.write_bytes - self.cancelled_write_bytes


_IO_NAMES = (
    b"rchar:",
    b"wchar:",
    b"syscr:",
    b"syscw:",
    b"read_bytes:",
    b"write_bytes:",
    b"cancelled_write_bytes:",
)


_U64_DIGITS = 20
_U64_LIMIT = 2**64


def _u64(token: bytes) -> int:
    """A kernel u64 counter: ASCII digits only, below 2**64.

    ``int()`` alone would take ``-5``, ``+5``, ``1_000`` and a 400-digit number; each would
    become a negative or absurd rate.

    Raises:
        ValueError: when ``token`` is not such a number.
    """
    if len(token) > _U64_DIGITS or not token.isdigit():
        raise ValueError(token)
    value = int(token)
    if value >= _U64_LIMIT:
        raise ValueError(token)
    return value


def parse_io(text: bytes) -> IoCounters:
    """Parse ``/proc/PID/io``.

    Raises:
        ValueError: quoting the text, when a counter is missing or not a u64 number.
    """
    tokens = text.split()
    values = dict(zip(tokens[::2], tokens[1::2], strict=False))
    try:
        return IoCounters(*(_u64(values[name]) for name in _IO_NAMES))
    except (KeyError, ValueError):
        raise ValueError(f"not a /proc/PID/io text: {text[:120]!r}") from None


@dataclass(frozen=True, slots=True)
class StatFields:
    """The fields of ``/proc/PID/stat`` that the process view needs."""

    pid: int
    """Process or thread id (field 1)."""
    comm: str
    """Executable name, at most 15 characters (field 2)."""
    state: str
    """One-letter state, e.g. R, S, D (field 3)."""
    num_threads: int
    """Threads in the thread group (field 20)."""
    starttime: int
    """Start time in clock ticks since boot (field 22)."""
    blkio_ticks: int | None
    """Block I/O delay of this task in clock ticks (field 42); None on very old kernels."""


def parse_stat(text: bytes) -> StatFields:
    """Parse ``/proc/PID/stat`` or ``/proc/PID/task/TID/stat``.

    Raises:
        ValueError: quoting the text, when it is not a stat line.
    """
    open_paren = text.find(b"(")
    close_paren = text.rfind(b")")
    rest = text[close_paren + 2 :].split()
    try:
        if open_paren < 1 or close_paren < open_paren or len(rest) < 20:
            raise ValueError
        return StatFields(
            pid=_u64(text[:open_paren].strip()),
            comm=text[open_paren + 1 : close_paren].decode("utf-8", "replace"),
            state=rest[_STATE].decode("ascii", "replace"),
            num_threads=_u64(rest[_NUM_THREADS]),
            starttime=_u64(rest[_STARTTIME]),
            blkio_ticks=_u64(rest[_BLKIO_TICKS]) if len(rest) > _BLKIO_TICKS else None,
        )
    except ValueError:
        raise ValueError(f"not a /proc/PID/stat line: {text[:120]!r}") from None


@dataclass(frozen=True, slots=True)
class TaskCounters:
    """Cumulative I/O counters of one process (or one thread) at one moment."""

    pid: int
    """Process id (thread group id)."""
    tid: int
    """Thread id; equal to ``pid`` for a whole process."""
    starttime: int
    """Start time in clock ticks since boot; with the id it names the task for life."""
    comm: str
    """Executable name as the kernel keeps it (15 characters at most)."""
    cmdline: str
    """Command line, arguments joined by spaces; empty for kernel threads."""
    uid: int | None
    """Owner's uid (of ``/proc/PID``); None if it vanished before we could stat it."""
    user: str
    """Owner's user name, or the uid as text when it has no name."""
    state: str
    """One-letter state when last read (R, S, D...)."""
    num_threads: int
    """Threads in the process (1 for a thread entry)."""
    io: IoCounters | None
    """I/O counters; None when ``/proc/PID/io`` is not readable by us."""
    thread_ticks: tuple[tuple[int, int], ...] | None
    """``(tid, delayacct_blkio_ticks)`` per live thread; None when not read."""

    @property
    def key(self) -> TaskKey:
        """``(tid, starttime)``: the identity used to match samples."""
        return (self.tid, self.starttime)

    @property
    def is_thread(self) -> bool:
        """True for a thread entry that is not the thread group's leader."""
        return self.tid != self.pid

    @property
    def name(self) -> str:
        """The command line, or ``[comm]`` for kernel threads, as ps shows them."""
        return self.cmdline or f"[{self.comm}]"

    @property
    def blkio_ticks(self) -> int | None:
        """Block I/O delay summed over the live threads, in clock ticks."""
        if self.thread_ticks is None:
            return None
        return sum(t for _, t in self.thread_ticks)


@dataclass(frozen=True)
class ProcessSample:
    """Every process's counters at one moment, plus what could not be seen."""

    monotonic: float
    """``time.monotonic()`` when the process list was read."""
    wall_time: float
    """``time.time()`` at the same moment."""
    uptime_ticks: int | None
    """Clock ticks since boot (``/proc/uptime``) just before listing; None if unknown."""
    tasks: Mapping[TaskKey, TaskCounters]
    """Processes (or threads, in per-thread mode) by identity (read-only)."""
    delayacct: DelayAcct
    """Whether the kernel measured block I/O delay during this sample."""
    per_thread: bool = False
    """True when ``tasks`` holds one entry per thread instead of per process."""
    unreadable: int = 0
    """Processes whose I/O counters we may not read (not root)."""
    problems: tuple[str, ...] = ()
    """Files that could not be parsed, one line each."""
    duration_s: float = 0.0
    """How long the read took."""
    as_root: bool = False
    """Whether the reader ran with effective uid 0."""
    detail_pid: int | None = None
    """The process whose threads are in ``detail`` (see ``ProcessReader.detail_pid``)."""
    detail: Mapping[TaskKey, TaskCounters] = field(default_factory=lambda: _EMPTY)
    """The threads of ``detail_pid``, by identity."""

    @property
    def unreadable_message(self) -> str | None:
        """``"N processes not readable: run as root"``, or None when all were readable."""
        if not self.unreadable:
            return None
        noun = "process" if self.unreadable == 1 else "processes"
        if self.as_root:
            # Even root is refused some (e.g. a non-dumpable init in a microVM).
            return f"{self.unreadable} {noun} not readable (denied by the kernel)"
        return f"{self.unreadable} {noun} not readable: {NOT_READABLE_HINT}"


@dataclass(frozen=True, slots=True)
class TaskRates:
    """One process's (or thread's) I/O over one interval. None: cannot be known."""

    task: TaskCounters
    """The counters at the end of the interval (names, user, state)."""
    read_bps: float | None
    """DISK READ: bytes per second fetched from storage."""
    write_bps: float | None
    """DISK WRITE: bytes per second dirtied for storage, net of cancelled writes."""
    rchar_bps: float | None
    """Bytes per second read by syscalls, page-cache hits included."""
    wchar_bps: float | None
    """Bytes per second written by syscalls."""
    io_wait_pct: float | None
    """IO%: percentage of the interval spent waiting on block I/O, summed over threads
    (above 100 when several threads wait at once); None when delay accounting is off."""

    @property
    def disk_bps(self) -> float:
        """DISK READ + DISK WRITE (0 when unknown): the default sort key."""
        return (self.read_bps or 0.0) + (self.write_bps or 0.0)

    @property
    def active(self) -> bool:
        """Doing I/O in this interval, as ``iotop -o`` means it."""
        return self.disk_bps > 0 or bool(self.io_wait_pct)


def _thread_tick_delta(
    prev: tuple[tuple[int, int], ...] | None, cur: tuple[tuple[int, int], ...] | None
) -> int | None:
    # Per thread, so that a thread exiting (its ticks leave the sum) is no negative spike.
    if cur is None or prev is None:
        return None
    before = dict(prev)
    return sum(max(0, ticks - before.get(tid, 0)) for tid, ticks in cur)


def _zero_io() -> IoCounters:
    return IoCounters(0, 0, 0, 0, 0, 0, 0)


def task_rates(
    prev: TaskCounters | None,
    cur: TaskCounters,
    elapsed_s: float,
    *,
    delay_measured: bool = True,
) -> TaskRates:
    """Rates of ``cur`` since ``prev``; ``prev=None`` means "started in the interval".

    Counters that went backwards (only ``cancelled_write_bytes`` may outgrow
    ``write_bytes`` over an interval) give 0, never a negative rate.
    """
    deltas = _io_deltas(prev.io if prev is not None else _zero_io(), cur.io)
    per_s = 1.0 / elapsed_s if elapsed_s > 0 else 0.0
    io_wait: float | None = None
    if delay_measured and elapsed_s > 0:
        ticks = _thread_tick_delta(prev.thread_ticks if prev else (), cur.thread_ticks)
        if ticks is not None:
            # Read jitter can push one thread a tick past the interval: cap at 100% each.
            cap = 100.0 * max(1, len(cur.thread_ticks or ()))
            io_wait = min(cap, ticks * 100.0 / USER_HZ / elapsed_s)
    if deltas is None or elapsed_s <= 0:
        return TaskRates(cur, None, None, None, None, io_wait)
    read, write, rchar, wchar = deltas
    return TaskRates(cur, read * per_s, write * per_s, rchar * per_s, wchar * per_s, io_wait)


def _io_deltas(a: IoCounters | None, b: IoCounters | None) -> tuple[int, int, int, int] | None:
    """Read, net write, rchar and wchar deltas; never negative; None when unknown."""
    if a is None or b is None:
        return None
    return (
        max(0, b.read_bytes - a.read_bytes),
        max(0, b.disk_write_bytes - a.disk_write_bytes),
        max(0, b.rchar - a.rchar),
        max(0, b.wchar - a.wchar),
    )


def _started_since(task: TaskCounters, uptime_ticks: int | None) -> bool:
    return uptime_ticks is not None and task.starttime >= uptime_ticks


def _rates_of(
    prev_tasks: Mapping[TaskKey, TaskCounters],
    cur_tasks: Mapping[TaskKey, TaskCounters],
    prev_uptime: int | None,
    elapsed_s: float,
    delay_measured: bool,
) -> dict[TaskKey, TaskRates | None]:
    out: dict[TaskKey, TaskRates | None] = {}
    for key, task in cur_tasks.items():
        before = prev_tasks.get(key)
        if before is None and not _started_since(task, prev_uptime):
            # First sight of an older process: no baseline, no rates (never a spike).
            out[key] = None
        else:
            out[key] = task_rates(before, task, elapsed_s, delay_measured=delay_measured)
    return out


def rates_between(prev: ProcessSample, cur: ProcessSample) -> dict[TaskKey, TaskRates | None]:
    """Rates of every task of ``cur`` over the measured interval since ``prev``.

    A task absent from ``prev`` that started after ``prev`` listed the processes is rated
    from zero (all its I/O happened in the interval); any other newcomer gets None.
    """
    return _rates_of(
        prev.tasks,
        cur.tasks,
        prev.uptime_ticks,
        cur.monotonic - prev.monotonic,
        prev.delayacct.measurable and cur.delayacct.measurable,
    )


def detail_rates_between(
    prev: ProcessSample, cur: ProcessSample
) -> dict[TaskKey, TaskRates | None]:
    """Rates of the threads in ``cur.detail`` (empty when the detail process changed)."""
    if cur.detail_pid is None or prev.detail_pid != cur.detail_pid:
        return {key: None for key in cur.detail}
    return _rates_of(
        prev.detail,
        cur.detail,
        prev.uptime_ticks,
        cur.monotonic - prev.monotonic,
        prev.delayacct.measurable and cur.delayacct.measurable,
    )


@dataclass(frozen=True, slots=True)
class TaskTotals:
    """What one task did since the accumulation started (iotop's accumulated mode)."""

    task: TaskCounters
    """The latest counters (names, user)."""
    read_bytes: int | None
    """Bytes fetched from storage."""
    write_bytes: int | None
    """Bytes dirtied for storage, net of cancelled writes."""
    rchar: int | None
    """Bytes read by syscalls."""
    wchar: int | None
    """Bytes written by syscalls."""
    io_wait_s: float | None
    """Seconds spent waiting on block I/O, summed over threads."""

    @property
    def disk_bytes(self) -> int:
        """Read plus written bytes (0 when unknown): the default sort key."""
        return (self.read_bytes or 0) + (self.write_bytes or 0)


class Accumulator:
    """Totals since the first sample it saw, per task; tasks started later count from 0."""

    def __init__(self) -> None:
        self._start_uptime: int | None = None
        self._started = False
        self._base: dict[TaskKey, TaskCounters | None] = {}

    def reset(self) -> None:
        """Start counting again from the next sample."""
        self._started = False
        self._base.clear()

    def update(self, sample: ProcessSample) -> dict[TaskKey, TaskTotals]:
        """Totals of every task in ``sample`` since the start."""
        if not self._started:
            self._started = True
            self._start_uptime = sample.uptime_ticks
            self._base = dict(sample.tasks)
        out: dict[TaskKey, TaskTotals] = {}
        base = self._base
        for key, task in sample.tasks.items():
            if key not in base:
                base[key] = None if _started_since(task, self._start_uptime) else task
            out[key] = _totals(base[key], task)
        if len(base) > len(sample.tasks):
            # Forget the dead (base holds every task of the sample, so the rest are gone):
            # totals are shown only for live tasks, and churn must not grow this.
            self._base = {k: base[k] for k in sample.tasks}
        return out


def _totals(base: TaskCounters | None, cur: TaskCounters) -> TaskTotals:
    deltas = _io_deltas(base.io if base is not None else _zero_io(), cur.io)
    ticks = _thread_tick_delta(base.thread_ticks if base else (), cur.thread_ticks)
    wait = None if ticks is None else ticks / USER_HZ
    if deltas is None:
        return TaskTotals(cur, None, None, None, None, wait)
    return TaskTotals(cur, *deltas, io_wait_s=wait)


@dataclass
class _Known:
    """What the reader remembers about one live process between samples (mutable, private)."""

    last: TaskCounters
    io_fd: int = -1
    io_text: bytes = b""
    stat_fd: int = -1
    denied: bool = False


class ProcessReader:
    """Reads every process's counters, one immutable :class:`ProcessSample` per call.

    Between samples it keeps, per process: the command line and user (re-read only when
    the executable name changes, i.e. after exec), the last counters, and on a live /proc
    the open ``/proc/PID/io`` file. Call :meth:`close` (or use it as a context manager)
    to release those files.

    Args:
        roots: Where /proc is.
        per_thread: One entry per thread instead of per process (slower; no held files).
        hold_files: Keep ``/proc/PID/io`` open between samples; default: on a live /proc.
        read_ticks: Read the delay ticks; default: unless delay accounting is known off
            (then every tick reads 0 and the threads need not be listed).
    """

    def __init__(
        self,
        roots: Roots | None = None,
        *,
        per_thread: bool = False,
        hold_files: bool | None = None,
        read_ticks: bool | None = None,
    ) -> None:
        self.roots = roots or Roots()
        self.per_thread = per_thread
        self.read_ticks = read_ticks
        self.detail_pid: int | None = None
        """A process whose threads each sample also reads (the TUI's selection)."""
        self._proc_fd = os.open(self.roots.proc, os.O_RDONLY | os.O_DIRECTORY)
        self._hold = _is_live_procfs(self.roots) if hold_files is None else hold_files
        self._fd_budget = _fd_budget() if self._hold else 0
        self._held = 0
        self._known: dict[int, _Known] = {}
        self._users: dict[int, str] = {}

    def __enter__(self) -> ProcessReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every held file. The reader can still sample afterwards (it reopens)."""
        for known in self._known.values():
            self._release(known)
        self._known.clear()

    def __del__(self) -> None:
        try:
            self.close()
            os.close(self._proc_fd)
        except (OSError, AttributeError):
            pass

    def sample(self) -> ProcessSample:
        """Read all processes now. Never raises for vanished processes or bad content."""
        started = time.perf_counter()
        delayacct = read_delayacct(self.roots)
        want_ticks = delayacct.measurable if self.read_ticks is None else self.read_ticks
        uptime = self._uptime_ticks()
        now = time.monotonic()
        wall = time.time()
        try:
            pids = [int(n) for n in os.listdir(self._proc_fd) if n.isdigit()]
        except OSError as exc:
            return ProcessSample(
                now,
                wall,
                uptime,
                MappingProxyType({}),
                delayacct,
                self.per_thread,
                problems=(f"{self.roots.proc}: cannot list: {exc.strerror}",),
            )
        problems: list[str] = []
        tasks: dict[TaskKey, TaskCounters] = {}
        unreadable = 0
        if self.per_thread:
            for pid in pids:
                for task in self._read_threads(pid, want_ticks, problems):
                    tasks[task.key] = task
                    unreadable += task.io is None and not task.is_thread
        else:
            read_process = self._read_process  # the hot loop: 5,000 calls a tick
            known = self._known
            for pid in pids:
                one = read_process(pid, want_ticks, problems)
                if one is not None:
                    tasks[(one.tid, one.starttime)] = one
                    if one.io is None and (k := known.get(pid)) is not None and k.denied:
                        # Malformed counters are a problem line, not "run as root".
                        unreadable += 1
        self._forget_gone(pids, tasks)
        detail: Mapping[TaskKey, TaskCounters] = MappingProxyType({})
        if self.detail_pid is not None:
            detail = MappingProxyType(
                {t.key: t for t in self._read_threads(self.detail_pid, want_ticks, problems)}
            )
        return ProcessSample(
            monotonic=now,
            wall_time=wall,
            uptime_ticks=uptime,
            tasks=MappingProxyType(tasks),
            delayacct=delayacct,
            per_thread=self.per_thread,
            unreadable=unreadable,
            problems=tuple(problems[:20]),
            duration_s=time.perf_counter() - started,
            as_root=os.geteuid() == 0,
            detail_pid=self.detail_pid,
            detail=detail,
        )

    def _forget_gone(self, pids: list[int], tasks: Mapping[TaskKey, TaskCounters]) -> None:
        """Drop (and close the files of) every process not listed now; bound the user map."""
        known = self._known
        if len(known) > len(tasks):  # all of tasks are in known: the rest are gone
            for pid in known.keys() - set(pids):
                self._release(known.pop(pid))
        if len(self._users) > _USERS_KEPT:
            # Keep the names of the uids in use now: still bounded when uids churn (userns).
            live = {t.uid for t in tasks.values()}
            self._users = {uid: name for uid, name in self._users.items() if uid in live}

    # -- one process ---------------------------------------------------------------------

    def _read_process(self, pid: int, want_ticks: bool, problems: list[str]) -> TaskCounters | None:
        known = self._known.get(pid)
        if known is not None and known.io_fd >= 0:
            # A held file is bound to its process: ESRCH means it exited (maybe reused).
            try:
                text = os.pread(known.io_fd, 512, 0)
            except OSError:
                text = b""
            if not text:
                self._release(self._known.pop(pid))
                known = None
            elif not want_ticks:
                if text == known.io_text:
                    return known.last
                return self._refresh(pid, known, text, want_ticks, problems, None)
            else:
                stat_text = self._held_stat(pid, known)
                if not stat_text:
                    self._release(self._known.pop(pid))
                    return None
                last = known.last
                if text == known.io_text and last.thread_ticks is not None:
                    # Cheap check of the fields that change for an idle one-thread process.
                    rest = stat_text[stat_text.rfind(b")") + 2 :].split(None, _BLKIO_TICKS + 1)
                    if (
                        len(rest) > _BLKIO_TICKS
                        and rest[_NUM_THREADS] == b"1"
                        and last.num_threads == 1
                        and rest[_STATE].decode("ascii", "replace") == last.state
                        and rest[_BLKIO_TICKS].isdigit()  # else _refresh reports it
                        and last.thread_ticks == ((pid, int(rest[_BLKIO_TICKS])),)
                    ):
                        return last
                return self._refresh(pid, known, text, want_ticks, problems, stat_text)
        return self._read_fresh(pid, known, want_ticks, problems)

    def _held_stat(self, pid: int, known: _Known) -> bytes:
        """``/proc/PID/stat`` through a held file when the budget allows; b"" when gone."""
        if known.stat_fd < 0 and self._take_fd():
            try:
                known.stat_fd = os.open(
                    f"{pid}/stat", os.O_RDONLY | os.O_CLOEXEC, dir_fd=self._proc_fd
                )
            except OSError:
                self._held -= 1
                return b""
        if known.stat_fd < 0:
            return self._read(f"{pid}/stat", 1024) or b""
        try:
            return os.pread(known.stat_fd, 1024, 0)
        except OSError:
            return b""

    def _refresh(
        self,
        pid: int,
        known: _Known,
        io_text: bytes,
        want_ticks: bool,
        problems: list[str],
        stat_text: bytes | None,
    ) -> TaskCounters | None:
        """A known live process whose held io file (and maybe stat) we just read."""
        if stat_text is None:
            st = self._stat(f"{pid}/stat", problems)
        else:
            try:
                st = parse_stat(stat_text)
            except ValueError as exc:
                problems.append(f"{self.roots.proc}/{pid}/stat: {exc}")
                st = None
        if st is None:
            self._release(self._known.pop(pid))
            return None
        io = known.last.io
        if io_text != known.io_text:
            try:
                io = parse_io(io_text)
            except ValueError as exc:
                problems.append(f"{self.roots.proc}/{pid}/io: {exc}")
                io = None
            known.io_text = io_text
        last = known.last
        ticks = self._ticks(pid, st, want_ticks)
        cmdline = last.cmdline if st.comm == last.comm else self._cmdline(f"{pid}/cmdline")
        known.last = TaskCounters(
            pid,
            pid,
            last.starttime,
            st.comm,
            cmdline,
            last.uid,
            last.user,
            st.state,
            st.num_threads,
            io,
            ticks,
        )
        return known.last

    def _read_fresh(
        self, pid: int, known: _Known | None, want_ticks: bool, problems: list[str]
    ) -> TaskCounters | None:
        """A process without a held file: new, unreadable, or on a captured tree."""
        st = self._stat(f"{pid}/stat", problems)
        if st is None:
            if known is not None:
                self._release(self._known.pop(pid))
            return None
        if known is not None and known.last.starttime != st.starttime:
            self._release(self._known.pop(pid))  # the PID was reused by a new process
            known = None
        if known is not None and known.denied and known.last.comm == st.comm:
            # Still not ours to read (until it execs): skip a certain EACCES per tick.
            last = known.last
            ticks = self._ticks(pid, st, want_ticks)
            if ticks != last.thread_ticks or st.state != last.state:
                known.last = replace(
                    last, state=st.state, num_threads=st.num_threads, thread_ticks=ticks
                )
            return known.last
        io_fd = -1
        denied = False
        io: IoCounters | None = None
        io_text = b""
        try:
            io_fd = os.open(f"{pid}/io", os.O_RDONLY | os.O_CLOEXEC, dir_fd=self._proc_fd)
            io_text = os.read(io_fd, 512)
        except OSError as exc:
            if io_fd >= 0:
                os.close(io_fd)
                io_fd = -1
            if exc.errno in _GONE:
                if known is not None:
                    self._known.pop(pid)
                return None
            denied = exc.errno in _DENIED
            if not denied:
                problems.append(f"{self.roots.proc}/{pid}/io: {exc.strerror}")
        if io_text:
            try:
                io = parse_io(io_text)
            except ValueError as exc:
                problems.append(f"{self.roots.proc}/{pid}/io: {exc}")
        if io_fd >= 0 and not (self._hold and self._take_fd()):
            os.close(io_fd)
            io_fd = -1
        ticks = self._ticks(pid, st, want_ticks)
        if known is not None and known.last.comm == st.comm:
            cmdline, uid, user = known.last.cmdline, known.last.uid, known.last.user
        else:
            cmdline = self._cmdline(f"{pid}/cmdline")
            uid, user = self._owner(str(pid))
        task = TaskCounters(
            pid,
            pid,
            st.starttime,
            st.comm,
            cmdline,
            uid,
            user,
            st.state,
            st.num_threads,
            io,
            ticks,
        )
        if known is None:
            self._known[pid] = _Known(task, io_fd, io_text, denied=denied)
        else:
            known.last, known.io_fd, known.io_text, known.denied = task, io_fd, io_text, denied
        return task

    def _ticks(
        self, pid: int, st: StatFields, want_ticks: bool
    ) -> tuple[tuple[int, int], ...] | None:
        if not want_ticks or st.blkio_ticks is None:
            return None
        if st.num_threads <= 1:
            return ((pid, st.blkio_ticks),)
        out = []
        try:
            tids = self._listdir(f"{pid}/task")
        except OSError:
            return ((pid, st.blkio_ticks),)
        for tid in tids:
            tst = self._stat(f"{pid}/task/{tid}/stat", None)
            if tst is not None and tst.blkio_ticks is not None:
                out.append((tst.pid, tst.blkio_ticks))
        return tuple(out)

    # -- threads -------------------------------------------------------------------------

    def _read_threads(self, pid: int, want_ticks: bool, problems: list[str]) -> list[TaskCounters]:
        """One entry per thread of ``pid`` (per-thread mode and the detail view)."""
        try:
            tids = self._listdir(f"{pid}/task")
        except OSError:
            return []
        head = self._stat(f"{pid}/stat", problems)
        if head is None:
            return []
        known = self._known.get(pid)
        if known is not None and known.last.comm == head.comm:
            cmdline, uid, user = known.last.cmdline, known.last.uid, known.last.user
        else:
            cmdline = self._cmdline(f"{pid}/cmdline")
            uid, user = self._owner(str(pid))
        out = []
        for tid in tids:
            base = f"{pid}/task/{tid}"
            st = self._stat(f"{base}/stat", problems)
            if st is None:
                continue
            io: IoCounters | None = None
            text = self._read(f"{base}/io")
            if text:
                try:
                    io = parse_io(text)
                except ValueError as exc:
                    problems.append(f"{self.roots.proc}/{base}/io: {exc}")
            ticks = (
                ((st.pid, st.blkio_ticks),) if want_ticks and st.blkio_ticks is not None else None
            )
            out.append(
                TaskCounters(
                    pid,
                    st.pid,
                    st.starttime,
                    st.comm,
                    cmdline,
                    uid,
                    user,
                    st.state,
                    1,
                    io,
                    ticks,
                )
            )
        return out

    # -- small reads ---------------------------------------------------------------------

    def _listdir(self, rel: str) -> list[str]:
        fd = os.open(rel, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self._proc_fd)
        try:
            return [n for n in os.listdir(fd) if n.isdigit()]
        finally:
            os.close(fd)

    def _read(self, rel: str, size: int = 4096) -> bytes | None:
        """The first ``size`` bytes of a file under /proc; None when gone or denied."""
        try:
            fd = os.open(rel, os.O_RDONLY | os.O_CLOEXEC, dir_fd=self._proc_fd)
        except OSError:
            return None
        try:
            return os.read(fd, size)
        except OSError:
            return None
        finally:
            os.close(fd)

    def _stat(self, rel: str, problems: list[str] | None) -> StatFields | None:
        text = self._read(rel, 1024)
        if not text:
            return None
        try:
            return parse_stat(text)
        except ValueError as exc:
            if problems is not None:
                problems.append(f"{self.roots.proc}/{rel}: {exc}")
            return None

    def _cmdline(self, rel: str) -> str:
        text = self._read(rel, 4096) or b""
        # Arguments may hold newlines or escapes: one display line, no terminal control.
        return text.rstrip(b"\0").translate(_CONTROL_TO_SPACE).decode("utf-8", "replace")

    def _owner(self, rel: str) -> tuple[int | None, str]:
        try:
            uid = os.stat(rel, dir_fd=self._proc_fd).st_uid
        except OSError:
            return None, "?"
        user = self._users.get(uid)
        if user is None:
            try:
                user = pwd.getpwuid(uid).pw_name
            except KeyError:
                user = str(uid)
            self._users[uid] = user
        return uid, user

    def _uptime_ticks(self) -> int | None:
        text = self._read("uptime", 128)
        try:
            return round(float(text.split()[0]) * USER_HZ) if text else None
        except (ValueError, IndexError):
            return None

    def _take_fd(self) -> bool:
        if self._held >= self._fd_budget:
            return False
        self._held += 1
        return True

    def _release(self, known: _Known) -> None:
        for fd in (known.io_fd, known.stat_fd):
            if fd >= 0:
                self._held -= 1
                with contextlib.suppress(OSError):
                    os.close(fd)
        known.io_fd = known.stat_fd = -1


def _is_live_procfs(roots: Roots) -> bool:
    """True when ``roots.proc`` is a procfs mount (its ``self`` is this process)."""
    try:
        return os.readlink(roots.proc / "self") == str(os.getpid())
    except OSError:
        return False


_USERS_KEPT = 1024
"""Uid -> name entries kept across samples beyond the uids in use."""
_FD_RESERVE = 512
_FD_WANTED = 65536


def _fd_budget() -> int:
    """How many /proc files the reader may hold open, raising the soft limit if allowed.

    The soft RLIMIT_NOFILE is raised towards the hard limit (at most 65536): the program
    uses epoll and poll, never select(), so high descriptor numbers are harmless.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < _FD_WANTED:
        target = _FD_WANTED if hard == resource.RLIM_INFINITY else min(hard, _FD_WANTED)
        if target > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (ValueError, OSError):
                pass
    if soft == resource.RLIM_INFINITY:
        soft = _FD_WANTED
    return max(0, (soft - _FD_RESERVE) // 2)


# -- open files on block devices ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenBlockFile:
    """One open file of a process and the block device its I/O most likely reaches."""

    fd: int
    """File descriptor number in the process."""
    path: str
    """What ``/proc/PID/fd/N`` points to (may end in `` (deleted)``)."""
    device: str
    """Kernel name of the block device, e.g. ``vda`` or ``dm-0``."""
    how: str
    """``device``: the block device itself is open (exact); ``filesystem``: a file on a
    filesystem whose device the kernel names (page cache may absorb the I/O);
    ``guess``: the filesystem has no device of its own (btrfs, overlay) and the device
    is taken from its mount source: a best guess."""

    @property
    def best_guess(self) -> bool:
        """True unless the kernel itself names the device (``how == "device"``)."""
        return self.how != "device"


@dataclass(frozen=True, slots=True)
class _Mount:
    fstype: str
    source: str
    super_options: str


def parse_mountinfo_sources(text: str) -> dict[tuple[int, int], _Mount]:
    """``(major, minor)`` of each mount -> its fstype, source and super options.

    Format (proc(5)): ``id parent major:minor root mountpoint options [optional...] -
    fstype source superopts``. Malformed lines are skipped.
    """
    out: dict[tuple[int, int], _Mount] = {}
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        parts = left.split()
        tail = right.split()
        if not sep or len(parts) < 5 or len(tail) < 2:
            continue
        major, _, minor = parts[2].partition(":")
        if major.isdigit() and minor.isdigit():
            out.setdefault(
                (int(major), int(minor)),
                _Mount(tail[0], tail[1], tail[2] if len(tail) > 2 else ""),
            )
    return out


_NAMES_KEPT = 4096


class BlockDeviceNames:
    """Maps ``major:minor`` to kernel block-device names through ``/sys/dev/block``."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._names: dict[tuple[int, int], str | None] = {}
        """Forgotten when it reaches _NAMES_KEPT: anonymous st_devs (tmpfs, overlay...)
        and loop minors come and go."""
        self._mounts: dict[tuple[int, int], _Mount] | None = None

    def name(self, major: int, minor: int) -> str | None:
        """The kernel name of a block device, or None if it is not one."""
        key = (major, minor)
        if key not in self._names:
            if len(self._names) >= _NAMES_KEPT:
                self._names.clear()
            try:
                link = os.readlink(self.roots.sys / "dev" / "block" / f"{major}:{minor}")
                self._names[key] = os.path.basename(link)
            except OSError:
                self._names[key] = None
        return self._names[key]

    def holder_of(self, st_dev: int) -> tuple[str, str] | None:
        """``(device, how)`` for the filesystem of a file with this ``st_dev``."""
        major, minor = os.major(st_dev), os.minor(st_dev)
        name = self.name(major, minor)
        if name is not None:
            return name, "filesystem"
        mount = self.mounts().get((major, minor))
        if mount is None:
            return None
        if mount.fstype == "overlay":
            # Writes land in the upper layer; reads may come from any lower one.
            for opt in mount.super_options.split(","):
                if opt.startswith("upperdir="):
                    try:
                        upper = os.stat(opt.removeprefix("upperdir="))
                    except OSError:
                        return None
                    found = self.name(os.major(upper.st_dev), os.minor(upper.st_dev))
                    return (found, "guess") if found else None
            return None
        if mount.source.startswith("/dev/"):
            # btrfs gives each subvolume an anonymous st_dev; the source names one member.
            base = os.path.basename(os.path.realpath(mount.source))
            if (self.roots.sys_class_block / base).exists():
                return base, "guess"
        return None

    def mounts(self) -> dict[tuple[int, int], _Mount]:
        """The mount table, read once."""
        if self._mounts is None:
            try:
                with open(self.roots.proc / "self" / "mountinfo") as fh:
                    self._mounts = parse_mountinfo_sources(fh.read())
            except OSError:
                self._mounts = {}
        return self._mounts


def open_block_files(
    roots: Roots, pid: int, names: BlockDeviceNames | None = None
) -> tuple[OpenBlockFile, ...]:
    """The open files of ``pid`` that sit on a block device, sorted by fd.

    Block device nodes map exactly (``st_rdev``); regular files map through the
    ``st_dev`` of their filesystem. Sockets, pipes and files on tmpfs, procfs or network
    filesystems are left out. Returns () when the process is gone or not ours to read.
    """
    names = names or BlockDeviceNames(roots)
    fd_dir = roots.proc / str(pid) / "fd"
    try:
        fds = sorted(int(n) for n in os.listdir(fd_dir) if n.isdigit())
    except OSError:
        return ()
    out = []
    for fd in fds:
        link = f"{fd_dir}/{fd}"
        try:
            target = os.readlink(link)
            st = os.stat(link)  # follows the magic link to the open file itself
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            name = names.name(os.major(st.st_rdev), os.minor(st.st_rdev))
            if name is not None:
                out.append(OpenBlockFile(fd, target, name, "device"))
        elif stat.S_ISREG(st.st_mode):
            found = names.holder_of(st.st_dev)
            if found is not None:
                out.append(OpenBlockFile(fd, target, *found))
    return tuple(out)


def devices_hit(files: Iterable[OpenBlockFile]) -> dict[str, int]:
    """Block device name -> how many of the open files reach it."""
    out: dict[str, int] = {}
    for f in files:
        out[f.device] = out.get(f.device, 0) + 1
    return out
