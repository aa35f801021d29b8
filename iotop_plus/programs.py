"""One lookup for the external programs iotop-plus runs (fio, blkid, setpriv, bpftrace, ...),
and one contained run for those that answer once (smartctl, blkid, mount).

As root, ``PATH`` is ignored: a program is taken only from the system directories, and only
where the directory, its parents and the binary are owned by root and not writable by group
or others. A root shell whose ``PATH`` starts with a user's ``~/bin`` must never run that
user's ``fio``. Other users get ``PATH``, like any program they run.
Tests inject the search path with :func:`search_path_override` (in-process).

:func:`run_contained` runs a helper in its own session and process group: whatever it starts
is killed with it (``os.killpg``) when it exits, at its deadline, when the caller cancels and
when iotop-plus exits; its output is read up to :data:`OUTPUT_CAP`. fio and bpftrace, which
stream, run in their own sessions the same way and are killed as a group by their owners.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

#: Where root looks for programs, in order.
SYSTEM_PATH: tuple[str, ...] = (
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
)

_override: tuple[str, ...] | None = None
_override_lock = threading.Lock()


@dataclass(frozen=True)
class ProgramLookup:
    """Where a program was looked for, and what was found."""

    name: str
    """The program's name, e.g. ``fio``."""
    path: str | None
    """The binary to run, or None when none was found (or none could be trusted)."""
    searched: tuple[str, ...]
    """The directories searched, in order."""
    skipped: tuple[str, ...]
    """``PATH: reason`` for each candidate refused as untrusted (root only)."""
    trusted_only: bool
    """True when running as root: system directories only, ``PATH`` ignored."""

    def missing(self, hint: str = "") -> str:
        """One line saying that the program is missing, where it was looked for, and why
        a candidate was refused."""
        where = ":".join(self.searched) or "(empty search path)"
        text = f"{self.name} is not installed (looked in {where}"
        if self.trusted_only:
            text += "; as root PATH is not used"
        text += ")"
        if self.skipped:
            text += "; skipped " + ", ".join(self.skipped)
        return f"{text}: {hint}" if hint else text


def search_path() -> tuple[str, ...]:
    """The directories searched now: the override, else the system ones (root) or PATH."""
    with _override_lock:
        if _override is not None:
            return _override
    if _is_root():
        return SYSTEM_PATH
    return tuple(d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d)


@contextlib.contextmanager
def search_path_override(directories: Sequence[str]) -> Iterator[None]:
    """Search only ``directories`` inside the block (tests); root still checks ownership."""
    global _override
    with _override_lock:
        saved, _override = _override, tuple(str(d) for d in directories)
    try:
        yield
    finally:
        with _override_lock:
            _override = saved


def lookup_program(name: str) -> ProgramLookup:
    """Find ``name`` the way iotop-plus runs it (see the module docstring)."""
    trusted_only = _is_root()
    dirs = search_path()
    skipped: list[str] = []
    for directory in dirs:
        candidate = os.path.join(directory, name)
        if not os.path.isfile(candidate) or not os.access(candidate, os.X_OK):
            continue
        if trusted_only:
            why = _untrusted(candidate)
            if why:
                skipped.append(f"{candidate}: {why}")
                continue
        return ProgramLookup(name, candidate, dirs, tuple(skipped), trusted_only)
    return ProgramLookup(name, None, dirs, tuple(skipped), trusted_only)


def find_program(name: str) -> str | None:
    """The binary to run for ``name``, or None (see :func:`lookup_program`)."""
    return lookup_program(name).path


def _is_root() -> bool:
    return os.geteuid() == 0


def _untrusted(path: str) -> str | None:
    """Why root must not run ``path``, or None when it may.

    The binary (after symlinks) and every directory above it and above the candidate's own
    name must be root's and not writable by group or others. A root-owned sticky directory
    (``/tmp``) may be world-writable above a root-owned one: nobody else can rename in it.
    """
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        return exc.strerror or "cannot stat"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != 0:
        return f"owned by uid {st.st_uid}, not root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by group or others"
    for start in {os.path.dirname(real), os.path.realpath(os.path.dirname(path))}:
        why = _untrusted_dirs(start)
        if why:
            return why
    return None


def _untrusted_dirs(directory: str) -> str | None:
    first = True
    current = directory
    while True:
        try:
            st = os.stat(current)
        except OSError as exc:
            return f"{current}: {exc.strerror}"
        if st.st_uid != 0:
            return f"directory {current} is owned by uid {st.st_uid}, not root"
        writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if writable and (first or not st.st_mode & stat.S_ISVTX):
            return f"directory {current} is writable by group or others"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current, first = parent, False


OUTPUT_CAP = 4 * 1024 * 1024
"""Bytes read of a helper's stdout (and of its stderr) at most; more stops it."""

EXITED, TIMED_OUT, CANCELLED, TOO_MUCH = "exited", "timed out", "cancelled", "too much output"
"""How a contained run ended (:attr:`HelperRun.ended`)."""

_READ_CHUNK = 65536
_POLL_S = 0.1
_SAFE_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}

_groups: set[int] = set()
_groups_lock = threading.Lock()


@dataclass(frozen=True)
class HelperRun:
    """What a contained run of a helper gave."""

    name: str
    """The program's name, for messages."""
    out: bytes
    """Its stdout, at most :data:`OUTPUT_CAP` bytes."""
    err: bytes
    """Its stderr (when asked for), at most :data:`OUTPUT_CAP` bytes."""
    returncode: int | None
    """Its exit status, negative for a signal; None when it was killed before it ended."""
    ended: str
    """:data:`EXITED`, :data:`TIMED_OUT`, :data:`CANCELLED` or :data:`TOO_MUCH`."""
    timeout: float
    """The deadline it had, in seconds."""
    left_behind: int = 0
    """Processes it started that were still running when it ended (killed with it)."""

    def problem(self) -> str | None:
        """One line saying what went wrong, or None when it exited by itself."""
        others = ""
        if self.left_behind:
            n = self.left_behind
            others = f" with the {n} process{'es' if n > 1 else ''} it started"
        if self.ended == TIMED_OUT:
            return f"{self.name} gave no answer in {self.timeout:g} s and was killed{others}"
        if self.ended == CANCELLED:
            return f"{self.name} was stopped before it answered (iotop-plus is quitting)"
        if self.ended == TOO_MUCH:
            mib = OUTPUT_CAP // (1024 * 1024)
            return f"{self.name} printed more than {mib} MiB; it was stopped and killed{others}"
        if self.left_behind:
            return f"{self.name} exited leaving {self.left_behind} process(es) running; killed"
        return None


def run_contained(
    argv: Sequence[str],
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
    stderr: bool = False,
    pass_fds: Sequence[int] = (),
) -> HelperRun:
    """Run ``argv`` in its own session and wait for it, ``timeout`` seconds at most.

    Its whole process group is killed when it exits (a child it forked, holding its output,
    ends with it), at the deadline, when ``cancel`` is set and when it prints more than
    :data:`OUTPUT_CAP` bytes on a stream. ``env`` defaults to a small one with the system
    ``PATH``; ``stderr`` reads its stderr too (else it goes nowhere). Raises OSError when it
    cannot be started.
    """
    name = os.path.basename(argv[0])
    proc = popen_held(  # its own group; the terminal's ^C is ours
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
        env=dict(env if env is not None else _SAFE_ENV),
        pass_fds=tuple(pass_fds),
    )
    try:
        ended, out, err, left = _collect(proc, timeout, cancel)
    finally:
        _kill_group(proc.pid, count=False)  # whatever happened here, nothing of it survives
        release_group(proc.pid)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)  # one stuck in the kernel is reaped later
    code = proc.returncode if ended == EXITED else None
    return HelperRun(name, out, err, code, ended, timeout, left)


def _collect(
    proc: subprocess.Popen[bytes], timeout: float, cancel: threading.Event | None
) -> tuple[str, bytes, bytes, int]:
    """Read the helper's output until it exited and its pipes are closed, or the run must
    stop; returns how it ended, what it printed and how many processes it left running. The
    helper is never reaped here, so its pid (its group's id) stays its own until killed."""
    deadline = time.monotonic() + timeout
    buffers: dict[int, bytearray] = {}
    left: int | None = None
    with selectors.DefaultSelector() as selector:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
                selector.register(pipe.fileno(), selectors.EVENT_READ)
                buffers[pipe.fileno()] = bytearray()
        while True:
            if left is None and _has_exited(proc.pid):
                left = _kill_group(proc.pid)  # what it left behind, holding its output or not
            if left is not None and not selector.get_map():
                ended = EXITED
                break
            if cancel is not None and cancel.is_set():
                ended = CANCELLED
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                ended = TIMED_OUT if left is None else EXITED
                break
            if _read_ready(selector, buffers, min(_POLL_S, remaining)):
                ended = TOO_MUCH
                break
    if left is None:
        left = _kill_group(proc.pid)
    return ended, _taken(buffers, proc.stdout), _taken(buffers, proc.stderr), left


def _taken(buffers: dict[int, bytearray], pipe: IO[bytes] | None) -> bytes:
    """What ``pipe`` gave, up to the cap (one copy; the buffer is emptied)."""
    if pipe is None:
        return b""
    buffer = buffers.pop(pipe.fileno())
    with memoryview(buffer) as view:
        taken = bytes(view[:OUTPUT_CAP])
    buffer.clear()
    return taken


def _read_ready(
    selector: selectors.BaseSelector, buffers: dict[int, bytearray], wait: float
) -> bool:
    """Read what the pipes hold now; True when a stream went over :data:`OUTPUT_CAP`."""
    if not selector.get_map():
        time.sleep(wait)  # both closed, the helper still running: wait for its exit
        return False
    for key, _ in selector.select(wait):
        fd = key.fd
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            selector.unregister(fd)
            continue
        buffers[fd] += chunk
        if len(buffers[fd]) > OUTPUT_CAP:
            return True
    return False


def _has_exited(pid: int) -> bool:
    """Whether the helper exited, without reaping it."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _kill_group(pgid: int, count: bool = True) -> int:
    """SIGKILL every process of group ``pgid`` (the helper's; its leader unreaped, so the id
    cannot have been reused); returns how many there were besides the leader."""
    others = _group_members(pgid) - {pgid} if count else set()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    return len(others)


def _group_members(pgid: int) -> set[int]:
    """The live processes whose process group is ``pgid`` (from ``/proc/PID/stat``)."""
    found = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat_line = f.read()
            except OSError:
                continue
            fields = stat_line[stat_line.rfind(b")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
                found.add(int(entry.name))
    return found


def popen_held(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` in a session of its own, whose group is held (:func:`hold_group`)
    before iotop-plus can exit: the exit's kill waits for the start, so no helper starts
    unheld in the moment between its start and its hold."""
    with _groups_lock:
        proc = subprocess.Popen(list(argv), start_new_session=True, **kwargs)
        _groups.add(proc.pid)
    return proc


def hold_group(pgid: int) -> None:
    """Kill process group ``pgid`` when iotop-plus exits, unless released before: for a helper
    started in its own session by its owner (fio, bpftrace). Release it before reaping its
    leader (until then the id cannot be reused)."""
    with _groups_lock:
        _groups.add(pgid)


def release_group(pgid: int) -> None:
    """No longer kill group ``pgid`` at exit (its leader is about to be reaped)."""
    with _groups_lock:
        _groups.discard(pgid)


@atexit.register
def _kill_running() -> None:
    """At exit, no helper outlives iotop-plus (a worker thread may still be waiting on one)."""
    with _groups_lock:
        groups = list(_groups)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
