"""The recording directory: daily files, one recorder at a time, retention, a full disk.

The directory is refused when it is a symlink, owned by another user, or writable by group or
others (the same rule as the state directory). Files are made 0600 with ``O_EXCL|O_NOFOLLOW``
through the directory's descriptor, and are never rewritten: a restart or a new UTC day starts
a new file, and retention only deletes whole files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.roots import open_regular
from iotop_plus.state import StateDir, StateError

RECORDINGS = "recordings"
"""The recording directory's name inside the state directory."""
FILE_GLOB = ("iotop-plus-", ".rec")
"""Recording files are ``iotop-plus-SEQ-YYYYMMDD-HHMMSS.rec`` (sequence number, UTC start
time); files of older versions are ``iotop-plus-YYYYMMDD-HHMMSS.rec``."""
_SEQ_NAME = re.compile(r"^iotop-plus-(\d{6,12})-\d{8}-\d{6}(?:-\d+)?\.rec$")
ROTATE_S = 3600.0
"""With ``--max-size``, the open file is closed and a new one started at least this often."""
ROTATE_SHARE = 8
"""With ``--max-size``, a file is closed once it holds ``max-size / ROTATE_SHARE`` bytes."""
LOCK = ".lock"
RETRY_S = 60.0
"""After a failed write, how long the recorder waits before starting a new file."""


class RecorderError(Exception):
    """The recording directory cannot be used; one line."""


def _check(path: Path, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise RecorderError(f"the recording directory {path} is a symbolic link; refusing it")
    if not stat.S_ISDIR(st.st_mode):
        raise RecorderError(f"the recording directory {path} is not a directory")
    if st.st_uid != os.geteuid():
        raise RecorderError(
            f"the recording directory {path} is owned by uid {st.st_uid}, not by this user"
        )
    if st.st_mode & 0o022:
        raise RecorderError(
            f"the recording directory {path} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):o}); refusing it"
        )


def open_dir(path: Path, *, create: bool = True) -> int:
    """A descriptor of the checked recording directory (made 0700 when missing)."""
    if create and not os.path.lexists(path):
        try:
            os.makedirs(path, 0o700, exist_ok=True)
        except OSError as exc:
            raise RecorderError(f"cannot create {path}: {exc.strerror or exc}") from None
    try:
        _check(path, os.lstat(path))
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise RecorderError(f"cannot use the recording directory {path}: {exc.strerror}") from None
    try:
        _check(path, os.fstat(fd))  # what we hold, not what the name meant a moment ago
    except RecorderError:
        os.close(fd)
        raise
    return fd


def recording_dir(state_dir: Path, override: str | None) -> Path:
    """``--dir DIR`` when given, else ``<state dir>/recordings`` (the state dir checked)."""
    if override:
        return Path(override)
    state = StateDir(state_dir)
    try:
        state.fd()
    except StateError as exc:
        raise RecorderError(str(exc)) from None
    finally:
        state.close()
    return state_dir / RECORDINGS


def file_seq(name: str) -> int | None:
    """The sequence number in a recording's name; None for a file of an older version."""
    m = _SEQ_NAME.match(name)
    return int(m.group(1)) if m else None


def recording_order(path: Path) -> tuple[int, int, str]:
    """Sort key, oldest first: files without a sequence number (by name, which is their start
    time), then by sequence number. Wall-clock times in names lie after the clock steps back;
    a sequence number never goes back."""
    seq = file_seq(path.name)
    return (0, 0, path.name) if seq is None else (1, seq, path.name)


def recording_files(directory: Path, *, every_kind: bool = False) -> list[Path]:
    """The recording files of a directory, oldest first (regular files only), in
    :func:`recording_order`.

    Args:
        every_kind: Also what only has a recording's name (a FIFO, a symlink...): readers
            try those and warn about the ones they cannot read; retention never sees them.
    """
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for name in sorted(names):
        if name.startswith(FILE_GLOB[0]) and name.endswith(FILE_GLOB[1]):
            try:
                if every_kind or stat.S_ISREG(os.lstat(directory / name).st_mode):
                    out.append(directory / name)
            except OSError:
                continue
    return sorted(out, key=recording_order)


class Recorder:
    """Writes recorded samples into daily files of one directory.

    Args:
        directory: The recording directory.
        header: Makes the header document of a new file (host, zone, current inventory).
        retain_s: Delete files older than this (None: keep).
        max_bytes: Delete the oldest files while the directory holds more (None: no limit).
        warn: Receives one-line messages for stderr.
    """

    def __init__(
        self,
        directory: Path,
        header: Callable[[], Mapping[str, Any]],
        *,
        retain_s: float | None = None,
        max_bytes: int | None = None,
        warn: Callable[[str], object] = print,
    ) -> None:
        self.directory = directory
        self.header = header
        self.retain_s = retain_s
        self.max_bytes = max_bytes
        self.warn = warn
        self.dir_fd = open_dir(directory)
        self._lock_fd = self._lock()
        self._fd: int | None = None
        self._name: str | None = None
        self._day: str | None = None
        self._opened_mono = 0.0
        self.writer: ChunkWriter | None = None
        self._retry_at = 0.0
        self._failed = False
        self._warned_size = False
        self.files_started = 0

    def _lock(self) -> int:
        try:
            fd = open_regular(
                LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=self.dir_fd
            )
        except OSError as exc:
            os.close(self.dir_fd)
            raise RecorderError(
                f"cannot open {self.directory / LOCK}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            os.close(self.dir_fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise RecorderError(
                f"another recorder{who} is writing to {self.directory}; not starting a second one"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    @property
    def current(self) -> Path | None:
        """The file being written, if any."""
        return self.directory / self._name if self._name else None

    def _next_seq(self) -> int:
        """One more than the highest sequence number in the directory (1 for the first)."""
        seqs = [file_seq(p.name) for p in recording_files(self.directory, every_kind=True)]
        return max([s for s in seqs if s is not None], default=0) + 1

    def _start_file(self, wall: float, inventory: Mapping[str, Any] | None) -> bool:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(wall))
        seq = self._next_seq()
        base = f"{FILE_GLOB[0]}{seq:06d}-{stamp}"
        for n in range(100):
            name = f"{base}{'' if n == 0 else f'-{n}'}{FILE_GLOB[1]}"
            try:
                fd = os.open(
                    name,
                    os.O_WRONLY
                    | os.O_CREAT
                    | os.O_EXCL
                    | os.O_NOFOLLOW
                    | os.O_CLOEXEC
                    | os.O_APPEND,
                    0o600,
                    dir_fd=self.dir_fd,
                )
                break
            except FileExistsError:
                continue
            except OSError as exc:
                self._fail(self.directory / name, exc)
                return False
        else:
            return False
        header = dict(self.header())
        if inventory is not None:
            header.update(inventory)
        header["seq"] = seq
        try:
            self.writer = ChunkWriter(fd, header)
        except OSError as exc:
            os.close(fd)
            os.unlink(name, dir_fd=self.dir_fd)  # ours, and holds no sample
            self._fail(self.directory / name, exc)
            return False
        self._fd, self._name = fd, name
        self._day = stamp[:8]
        self._opened_mono = time.monotonic()
        self.files_started += 1
        if self._failed:
            self.warn(f"recording again, into {self.directory / name}")
            self._failed = False
        return True

    def _fail(self, path: Path, exc: OSError) -> None:
        self._retry_at = time.monotonic() + RETRY_S
        if not self._failed:
            what = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
            self.warn(
                f"cannot write {path}: {what}; kept what was written, "
                f"retrying every {RETRY_S:.0f} s"
            )
        self._failed = True

    def _close_file(self, *, sync: bool = True) -> None:
        if self.writer is not None and sync:
            try:
                self.writer.close_chunk()
            except OSError as exc:
                self._fail(self.current or self.directory, exc)
        if self._fd is not None:
            os.close(self._fd)
        self._fd = self._name = None
        self.writer = None

    def write(self, rs: RecordedSample, inventory: Mapping[str, Any] | None = None) -> None:
        """Store one sample; ``inventory`` when the set of devices changed. Never raises OSError."""
        wall = rs.sample.wall_time
        day = time.strftime("%Y%m%d", time.gmtime(wall))
        if self.writer is not None and (day != self._day or self._rotate_now()):
            self._close_file()
            self._retention()
        if self.writer is None:
            if self._failed and time.monotonic() < self._retry_at:
                return
            if self._failed:
                self._retention()
            if not self._start_file(wall, inventory):
                return
            inventory = None  # the new file's header holds it
        writer = self.writer
        assert writer is not None
        trailers = writer.stats.trailers
        try:
            if inventory is not None:
                writer.inventory(inventory)
            writer.append(rs)
        except OSError as exc:
            # The file may end in a cut-short frame now: readers skip it with a warning.
            writer.abandon()
            self._fail(self.current or self.directory, exc)
            self._close_file(sync=False)
            return
        if writer.stats.trailers != trailers:
            self._retention()

    def _rotate_now(self) -> bool:
        """With ``--max-size``, whether the open file is big or old enough to close: retention
        deletes whole files, and never the one being written."""
        if self.max_bytes is None or self.writer is None:
            return False
        big = self.writer.stats.total >= self.max_bytes / ROTATE_SHARE
        return big or time.monotonic() - self._opened_mono >= ROTATE_S

    def _retention(self) -> None:
        files = recording_files(self.directory)
        current = self.current
        now = time.time()
        sizes = {}
        expiring = self.retain_s is not None  # only the oldest files, in sequence order
        for path in files:
            try:
                st = os.stat(path.name, dir_fd=self.dir_fd, follow_symlinks=False)
            except OSError:
                continue
            old = self.retain_s is not None and now - st.st_mtime > self.retain_s
            expiring = expiring and old and path != current
            if expiring:
                self._delete(path)
                continue
            sizes[path] = st.st_size
        if self.max_bytes is None:
            return
        total = sum(sizes.values())
        for path in list(sizes):
            if total <= self.max_bytes:
                break
            if path == current:
                continue
            self._delete(path)
            total -= sizes[path]
        if total > self.max_bytes and not self._warned_size:
            self._warned_size = True
            self.warn(f"the file being written alone exceeds --max-size ({self.max_bytes:,} bytes)")

    def _delete(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            os.unlink(path.name, dir_fd=self.dir_fd)

    def close(self) -> None:
        """Close the open chunk (trailer, ``fdatasync``) and release the directory."""
        self._close_file()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1
