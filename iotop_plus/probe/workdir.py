"""The private directory a probe file lives in, reached only through held descriptors.

A probe never gives fio a name in the directory the user chose: whoever can write there
could swap the probe file for a symlink between our checks and fio's open. Instead each
probe makes ``.iotop-plus-<pid>-XXXXXXXX`` (mode 0700) through a descriptor of that
directory, holds the subdirectory's descriptor (with an ``flock`` on it while the probe
lives), and fio gets ``/proc/self/fd/N/iotop-plus-probe-...``. Nobody else can enter the
subdirectory; renaming it changes nothing for fio. Removal goes through the same
descriptors and never follows a symlink.

A probe killed with SIGKILL leaves its subdirectory behind; :func:`remove_leftovers` removes
those of dead processes (ours only, marked files only) before the next probe.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
import threading
from pathlib import Path

#: Every probe file's name contains this, so leftovers are easy to find.
PROBE_FILE_MARK = "iotop-plus-probe"
#: Name of a probe's private subdirectory: the pid of the process that made it, and a token.
WORKDIR_RE = re.compile(r"^\.iotop-plus-(?P<pid>[0-9]+)-[0-9a-f]{8}$")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WorkdirError(Exception):
    """The private subdirectory cannot be made or used; one plain line."""


class ProbeWorkdir:
    """A private 0700 subdirectory of the chosen directory, held open for one probe."""

    def __init__(self, parent_fd: int, parent: Path) -> None:
        """Make the subdirectory through ``parent_fd`` (a descriptor of ``parent``).

        Raises:
            WorkdirError: it cannot be made, with the reason.
        """
        self.parent = parent
        """The directory the user chose (for messages only)."""
        self._parent_fd = os.dup(parent_fd)
        self._lock = threading.RLock()
        self.fd = -1
        """The subdirectory's descriptor: fio gets ``/proc/self/fd/<fd>/<file_name>``."""
        try:
            self.name, self.fd = self._make()
        except BaseException:
            os.close(self._parent_fd)
            raise
        self.file_name = f"{PROBE_FILE_MARK}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        """The probe file's name inside the subdirectory (fio creates it)."""
        st = os.fstat(self.fd)
        self._ino = (st.st_dev, st.st_ino)
        with _live_lock:
            _live.add(self)

    def _make(self) -> tuple[str, int]:
        for _ in range(5):
            name = f".iotop-plus-{os.getpid()}-{secrets.token_hex(4)}"
            try:
                os.mkdir(name, 0o700, dir_fd=self._parent_fd)
            except FileExistsError:
                continue
            except OSError as exc:
                raise WorkdirError(
                    f"cannot make a private probe directory in {self.parent}: {exc.strerror}"
                ) from None
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=self._parent_fd)
            except OSError:
                continue  # renamed or replaced by whoever can write the parent: next name
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or not stat.S_ISDIR(st.st_mode):
                os.close(fd)
                continue  # someone else's directory under our name: never use it
            os.fchmod(fd, 0o700)  # whatever the umask did
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # alive while this is held
            return name, fd
        raise WorkdirError(
            f"cannot make a private probe directory in {self.parent}: each one made was "
            "replaced at once (someone who can write there is interfering)"
        )

    @property
    def fio_filename(self) -> str:
        """What fio gets: a path through our descriptor, never a name in the parent."""
        return f"/proc/self/fd/{self.fd}/{self.file_name}"

    @property
    def display_path(self) -> Path:
        """Where the probe file is, for people (the name may have been changed by others)."""
        return self.parent / self.name / self.file_name

    def check_probe_file(self) -> str | None:
        """Why the probe file is not the regular file of ours that fio made, or None."""
        if self.fd < 0:
            return None  # removed already (the probe was stopped)
        try:
            st = os.stat(self.file_name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None  # not made (yet): nothing was written through it
        except OSError as exc:
            return f"cannot check the probe file: {exc.strerror}"
        if not stat.S_ISREG(st.st_mode):
            return "the probe file is not a regular file"
        if st.st_uid != os.geteuid():
            return f"the probe file is owned by uid {st.st_uid}"
        if st.st_nlink != 1:
            return "the probe file has other names"
        return None

    def lay_out(self, size: int, *, fill: bool) -> None:
        """Make the probe file (O_EXCL, never following a symlink) of ``size`` bytes: written
        with random bytes and fsynced once when ``fill``, else only allocated.

        Raises:
            OSError: it cannot be made or written (ENOSPC, EEXIST...).
        """
        fd = os.open(
            self.file_name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=self.fd,
        )
        try:
            if not fill:
                os.posix_fallocate(fd, 0, size)
                return
            chunk = secrets.token_bytes(1 << 20)
            done = 0
            while done < size:
                done += os.write(fd, memoryview(chunk)[: min(len(chunk), size - done)])
            os.fsync(fd)
        finally:
            os.close(fd)

    def try_open(self, flags: int) -> None:
        """Open the probe file with ``flags`` and close it: whether the filesystem takes them.

        Raises:
            OSError: the kernel's refusal (EINVAL for O_DIRECT where it is not supported).
        """
        os.close(os.open(self.file_name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd))

    def remove(self) -> None:
        """Remove the probe file and the subdirectory through the held descriptors; idempotent."""
        # Re-entrant locks and taking the descriptors first: a signal handler may call this
        # while the main thread is inside it.
        with self._lock:
            if self.fd < 0:
                return
            fd, parent_fd, self.fd = self.fd, self._parent_fd, -1
            with _live_lock:
                _live.discard(self)
        try:
            _empty(fd)
            with contextlib.suppress(OSError):
                st = os.stat(self.name, dir_fd=parent_fd, follow_symlinks=False)
                if (st.st_dev, st.st_ino) == self._ino:
                    os.rmdir(self.name, dir_fd=parent_fd)
        finally:
            os.close(fd)
            os.close(parent_fd)


def _empty(fd: int) -> int:
    """Unlink the marked entries of the directory ``fd`` (never recursing); returns bytes freed."""
    freed = 0
    try:
        names = os.listdir(fd)
    except OSError:
        return 0
    for name in names:
        if PROBE_FILE_MARK not in name:
            continue
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                continue
            os.unlink(name, dir_fd=fd)  # unlink never follows a symlink
            freed += st.st_blocks * 512
        except OSError:
            continue
    return freed


def remove_leftovers(parent_fd: int) -> tuple[int, int]:
    """Remove probe subdirectories left in ``parent_fd`` by dead processes of this user.

    A leftover is removed only when its name carries a pid that is not alive here, it is a
    directory owned by the current uid, and its ``flock`` is free (no fio still using it).
    Inside, only entries carrying the probe mark are unlinked (no recursion), then it is
    removed if empty. Returns (directories removed, bytes freed).
    """
    removed = freed = 0
    try:
        names = os.listdir(parent_fd)
    except OSError:
        return 0, 0
    for name in names:
        match = WORKDIR_RE.match(name)
        if match is None or _pid_alive(int(match["pid"])):
            continue
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError:
            continue  # a symlink, not a directory, or gone
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # still in use (an fio that outlived its parent)
            freed += _empty(fd)
            now = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                try:
                    os.rmdir(name, dir_fd=parent_fd)
                    removed += 1
                except OSError as exc:
                    if exc.errno != errno.ENOTEMPTY:
                        raise
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed, freed


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # ours: another probe of this process may be using it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM: alive, someone else's
    return True


# The probe directories alive now, so a signal handler or atexit can remove them even when
# the code that made them never reaches its ``finally``.
_live: set[ProbeWorkdir] = set()
_live_lock = threading.RLock()


def live_workdirs() -> tuple[ProbeWorkdir, ...]:
    """Probe directories this process has made and not yet removed."""
    with _live_lock:
        return tuple(_live)


def remove_all_workdirs() -> None:
    """Remove every probe directory still alive: for signal handlers and atexit."""
    for workdir in live_workdirs():
        workdir.remove()
