"""Reads every process's counters from /proc, one immutable sample per call.

On a live /proc the reader keeps ``/proc/PID/io`` open between samples: a held file stays
bound to its process (reads fail with ESRCH once it exits, even if the PID is reused), and
``pread`` of a held file costs a third of open+read+close. The files it may hold are bounded
by the descriptor limit (see :func:`_fd_budget`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import resource
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.delayacct import read_delayacct
from iotop_plus.sampling.processes.pid_files import (
    BLKIO_TICKS_FIELD,
    NUM_THREADS_FIELD,
    STATE_FIELD,
    USER_HZ,
    IoCounters,
    StatFields,
    parse_io,
    parse_stat,
)
from iotop_plus.sampling.processes.rates import ProcessSample, TaskCounters, TaskKey

_CONTROL_TO_SPACE = bytes(32 if b < 32 or b == 127 else b for b in range(256))
_GONE = (errno.ENOENT, errno.ESRCH)
_DENIED = (errno.EACCES, errno.EPERM)


@dataclass
class _Known:
    """What the reader remembers about one live process between samples (mutable, private)."""

    last: TaskCounters
    io_fd: int = -1
    io_text: bytes = b""
    stat_fd: int = -1
    denied: bool = False
    comm: bytes | None = None
    """``/proc/PID/comm`` as last read (None: not read yet)."""


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
                    rest = stat_text[stat_text.rfind(b")") + 2 :].split(None, BLKIO_TICKS_FIELD + 1)
                    if (
                        len(rest) > BLKIO_TICKS_FIELD
                        and rest[NUM_THREADS_FIELD] == b"1"
                        and last.num_threads == 1
                        and rest[STATE_FIELD].decode("ascii", "replace") == last.state
                        and rest[BLKIO_TICKS_FIELD].isdigit()  # else _refresh reports it
                        and last.thread_ticks == ((pid, int(rest[BLKIO_TICKS_FIELD])),)
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
        if stat_text is None and self._same_but_chars(pid, known, io_text):
            return known.last
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
            st.ppid,
        )
        return known.last

    def _same_but_chars(self, pid: int, known: _Known, io_text: bytes) -> bool:
        """Whether only the character and syscall counters of ``io_text`` moved (a process
        reading a pipe, a terminal or the page cache) and its name is the same: then its
        ``stat`` (costly: docs/performance.md) is not read again
        and the task's state, threads and parent stay as last read; ``known`` takes the new
        io. A process that did disk I/O, or exec'd, is read whole."""
        last = known.last.io
        try:
            io = parse_io(io_text)
        except ValueError:
            return False  # _refresh reports it
        if (
            last is None
            or io.read_bytes != last.read_bytes
            or io.write_bytes != last.write_bytes
            or io.cancelled_write_bytes != last.cancelled_write_bytes
        ):
            return False
        comm = self._read(f"{pid}/comm", 64)
        if not comm or comm != known.comm:
            known.comm = comm  # the stat read next gives the name that goes with it
            return False
        known.io_text = io_text
        known.last = replace(known.last, io=io)
        return True

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
            # Still not ours to read (until it execs): skip a certain EACCES per frame.
            return self._still_denied(pid, known, st, want_ticks)
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
            st.ppid,
        )
        if known is None:
            self._known[pid] = _Known(task, io_fd, io_text, denied=denied)
        else:
            known.last, known.io_fd, known.io_text, known.denied = task, io_fd, io_text, denied
        return task

    def _still_denied(
        self, pid: int, known: _Known, st: StatFields, want_ticks: bool
    ) -> TaskCounters:
        """A process whose io file we may not read: its last counters, with the state and
        delay ticks of this ``stat``."""
        last = known.last
        ticks = self._ticks(pid, st, want_ticks)
        if ticks != last.thread_ticks or st.state != last.state:
            known.last = replace(
                last, state=st.state, num_threads=st.num_threads, thread_ticks=ticks
            )
        return known.last

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
                    st.ppid,
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
        return text.rstrip(b"\0").translate(_CONTROL_TO_SPACE).decode("utf-8", "surrogateescape")

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
