"""The state directory: the settings journal, probe history and run locks of iotop-plus.

As root it is always ``/var/lib/iotop-plus`` (``XDG_*`` and ``HOME`` are ignored, so ``sudo``,
``sudo -E`` and a systemd unit share one journal); for other users
``$XDG_STATE_HOME/iotop-plus`` (default ``~/.local/state/iotop-plus``); ``--state-dir DIR``
overrides both. The directory is refused when it is a symlink, owned by another user, or
writable by group or others. Every file in it is 0600 and opened with ``O_NOFOLLOW``.

A run is alive while it holds an ``flock`` on ``DIR/runs/<run-id>.lock``: pids are reused and
differ across pid namespaces, but a lock dies with its process.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from iotop_plus.roots import open_regular

#: The state directory of root, whatever the environment says.
ROOT_STATE_DIR = Path("/var/lib/iotop-plus")
#: The settings journal, inside the state directory.
CHANGES = "changes.jsonl"
#: Probe, sweep and A/B starts and results, inside the state directory.
PROBES = "probes.jsonl"
#: Run locks, inside the state directory.
RUNS = "runs"

_FILE_MODE = 0o600
_DIR_MODE = 0o700


class StateError(Exception):
    """The state directory or a file in it is unsafe or unusable; the message is one line."""


def default_state_dir(environ: Mapping[str, str] | None = None, euid: int | None = None) -> Path:
    """``/var/lib/iotop-plus`` for root, else ``$XDG_STATE_HOME/iotop-plus``."""
    if (os.geteuid() if euid is None else euid) == 0:
        return ROOT_STATE_DIR
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or ""
    # The XDG spec says a relative path is invalid and must be ignored.
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "iotop-plus"


def chosen_state_dir(arg: str | os.PathLike[str] | None) -> Path:
    """``--state-dir DIR`` when given, else :func:`default_state_dir`."""
    return Path(arg) if arg else default_state_dir()


def new_run_id() -> str:
    """A run id unique across runs and hosts: ``20260102T030405-<pid>-<random>``."""
    # (os.urandom, as secrets.token_hex reads it: importing secrets loads random, hashlib
    # and OpenSSL's library, 2 ms of the TUI's start)
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{os.urandom(4).hex()}"


def _check_dir(path: Path, st: os.stat_result, what: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise StateError(f"{what} {path} is a symbolic link; refusing it")
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(f"{what} {path} is not a directory")
    if st.st_uid != os.geteuid():
        raise StateError(f"{what} {path} is owned by uid {st.st_uid}, not by this user")
    if st.st_mode & 0o022:
        raise StateError(
            f"{what} {path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
        )


class StateDir:
    """One checked state directory, held open by a descriptor (created 0700 when missing).

    Args:
        path: The iotop-plus directory itself (``--state-dir DIR``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        """The directory."""
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"StateDir({str(self.path)!r})"

    def exists(self) -> bool:
        """Whether the directory (or something at its name) exists."""
        return os.path.lexists(self.path)

    def fd(self, create: bool = True) -> int:
        """The directory's descriptor, after the safety checks.

        Raises:
            StateError: a symlink, another owner, group/world-writable, or not creatable.
        """
        if self._fd is not None:
            return self._fd
        if create and not os.path.lexists(self.path):
            try:
                os.makedirs(self.path.parent, mode=_DIR_MODE, exist_ok=True)
                os.mkdir(self.path, _DIR_MODE)
            except FileExistsError:
                pass
            except OSError as exc:
                raise StateError(
                    f"cannot create the state directory {self.path}: {exc.strerror or exc}"
                ) from None
        try:
            _check_dir(self.path, os.lstat(self.path), "the state directory")
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except StateError:
            raise
        except OSError as exc:
            raise StateError(
                f"cannot use the state directory {self.path}: {exc.strerror}"
            ) from None
        try:
            # The same checks on what we hold: it may have been swapped after lstat.
            _check_dir(self.path, os.fstat(fd), "the state directory")
        except StateError:
            os.close(fd)
            raise
        self._fd = fd
        return fd

    def close(self) -> None:
        """Close the directory's descriptor."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def open_file(self, name: str, flags: int, dir_fd: int | None = None) -> int:
        """Open ``name`` in the directory (or in ``dir_fd``), 0600, never through a symlink.

        Raises:
            StateError: naming the file and why (a symlink, another owner, not a file...).
        """
        base = self.fd() if dir_fd is None else dir_fd
        where = self.path / name
        try:
            # O_NONBLOCK: opening a FIFO planted here must not wait for a writer.
            fd = os.open(
                name,
                flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK,
                _FILE_MODE,
                dir_fd=base,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StateError(f"{where} is a symbolic link; refusing it") from None
            raise StateError(f"cannot open {where}: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StateError(f"{where} is not a regular file")
            if st.st_uid != os.geteuid():
                raise StateError(f"{where} is owned by uid {st.st_uid}, not by this user")
            if stat.S_IMODE(st.st_mode) != _FILE_MODE and flags & (os.O_WRONLY | os.O_RDWR):
                os.fchmod(fd, _FILE_MODE)
            os.set_blocking(fd, True)
        except StateError:
            os.close(fd)
            raise
        return fd

    def append(self, name: str, record: Mapping[str, Any]) -> None:
        """Append ``record`` as one JSON line to ``name``, and flush it to disk.

        A last line cut short (a crash mid-write) is ended first, so it cannot swallow
        this record.

        Raises:
            StateError: the file is unsafe, or the write failed (ENOSPC, EROFS...).
        """
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        fd = self.open_file(name, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            raise StateError(f"cannot write {self.path / name}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)

    def records(self, name: str, skipped: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """The JSON objects of ``name``, oldest first; lines that do not parse are skipped.

        Args:
            skipped: When given, receives each skipped line (for a "skipped N lines" note).

        Raises:
            StateError: the directory or file is unsafe.
        """
        if not os.path.lexists(self.path) or not os.path.lexists(self.path / name):
            return
        fd = self.open_file(name, os.O_RDONLY)
        lines = JsonLines()
        try:
            offset = 0
            while chunk := os.pread(fd, READ_CHUNK, offset):
                offset += len(chunk)
                yield from lines.feed(chunk, skipped)
            yield from lines.feed(b"\n", skipped)  # a last line without its newline
        finally:
            os.close(fd)

    # --- run locks -----------------------------------------------------------------------------

    def _runs_fd(self) -> int:
        base = self.fd()
        try:
            os.mkdir(RUNS, _DIR_MODE, dir_fd=base)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StateError(f"cannot create {self.path / RUNS}: {exc.strerror}") from None
        try:
            fd = os.open(
                RUNS, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=base
            )
        except OSError as exc:
            raise StateError(f"cannot use {self.path / RUNS}: {exc.strerror}") from None
        try:
            _check_dir(self.path / RUNS, os.fstat(fd), "the run directory")
        except StateError:
            os.close(fd)
            raise
        return fd

    def lock_run(self, run_id: str) -> int:
        """Take the lock that says run ``run_id`` is alive; returns its descriptor.

        Raises:
            StateError: the lock cannot be made or is held by another process.
        """
        runs = self._runs_fd()
        try:
            fd = self.open_file(f"{run_id}.lock", os.O_RDWR | os.O_CREAT, dir_fd=runs)
        finally:
            os.close(runs)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StateError(f"cannot lock run {run_id}: {exc.strerror}") from None
        return fd

    def unlock_run(self, run_id: str, fd: int) -> None:
        """Remove the run's lock file and release the lock (the run ended cleanly)."""
        try:
            runs = self._runs_fd()
            try:
                os.unlink(f"{run_id}.lock", dir_fd=runs)
            finally:
                os.close(runs)
        except (OSError, StateError):
            pass
        os.close(fd)

    def run_alive(self, run_id: str) -> bool:
        """Whether a process still holds the lock of run ``run_id``."""
        if "/" in run_id or run_id in ("", ".", ".."):
            return False
        lock = self.path / RUNS / f"{run_id}.lock"
        try:
            fd = open_regular(lock, os.O_RDONLY | os.O_NOFOLLOW)  # a FIFO here must not hang
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # also drops our shared lock
        return False


__all__ = [
    "CHANGES",
    "PROBES",
    "ROOT_STATE_DIR",
    "RUNS",
    "StateDir",
    "StateError",
    "chosen_state_dir",
    "default_state_dir",
    "new_run_id",
]


MAX_LINE_BYTES = 1 << 20
"""A journal line longer than this is skipped (a corrupt or hostile file must not fill memory)."""
READ_CHUNK = 1 << 20
"""Bytes read per call."""


class JsonLines:
    """The one JSON-lines reader: splits bytes fed in pieces into lines, and yields each line
    that is a JSON object. A line longer than :data:`MAX_LINE_BYTES` is skipped whole, without
    holding more than that of it in memory; blank lines are ignored."""

    def __init__(self) -> None:
        self._partial = b""
        self._overlong = False

    def feed(self, data: bytes, skipped: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """The objects of the lines ``data`` completes (the rest waits for more data).

        Args:
            skipped: When given, receives each skipped line (the start of an overlong one).
        """
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            overlong, self._overlong = self._overlong or len(raw) > MAX_LINE_BYTES, False
            if overlong:
                if skipped is not None:
                    skipped.append(raw[:80].decode("utf-8", "replace") + "... (too long)")
                continue
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                yield doc
            elif skipped is not None:
                skipped.append(raw.decode("utf-8", "replace"))
        if len(self._partial) > MAX_LINE_BYTES:  # drop what is held; skip the line's rest too
            self._partial = self._partial[:80]
            self._overlong = True


class JsonlTail:
    """New JSON lines of one file in the state directory, from where the last call stopped."""

    def __init__(self, state: StateDir, name: str, *, from_end: bool = False) -> None:
        """Args:
        state: The state directory.
        name: The file in it (``CHANGES``, ``PROBES``).
        from_end: Skip what the file holds now: only lines written from here on (the
            recorder); otherwise the whole file first (``serve`` counts it all).
        """
        self.state = state
        self.name = name
        self.offset = 0
        self._identity: tuple[int, int] | None = None
        self._lines = JsonLines()
        self._skip_existing = from_end
        self.problem: str | None = None
        """Why the file could not be read on the last call, or None."""
        if from_end:
            self.read()

    def read(self) -> tuple[bool, list[dict[str, Any]]]:
        """(restarted, new records): ``restarted`` when the file was replaced or shortened,
        so what was counted from it before must be dropped."""
        self.problem = None
        if not os.path.lexists(self.state.path / self.name):
            restarted = self.offset > 0
            self.offset, self._identity, self._lines = 0, None, JsonLines()
            self._skip_existing = False  # whatever appears from now on is new
            return restarted, []
        try:
            fd = self.state.open_file(self.name, os.O_RDONLY)
        except (StateError, OSError) as exc:
            self.problem = str(exc)
            return False, []
        try:
            st = os.fstat(fd)
            identity = (st.st_dev, st.st_ino)
            restarted = False
            if identity != self._identity or st.st_size < self.offset:
                restarted = self._identity is not None
                self.offset, self._identity, self._lines = 0, identity, JsonLines()
                if self._skip_existing:
                    self.offset = st.st_size
            self._skip_existing = False
            docs: list[dict[str, Any]] = []
            while chunk := os.pread(fd, READ_CHUNK, self.offset):
                self.offset += len(chunk)
                docs += self._lines.feed(chunk)
        except OSError as exc:
            self.problem = f"cannot read {self.state.path / self.name}: {exc.strerror or exc}"
            return False, []
        finally:
            os.close(fd)
        return restarted, docs
