"""Cgroup files kept open between ticks and read again with ``pread`` at offset 0.

At 1,000 busy cgroups a tick opened, read and closed 2,000 files (``io.stat`` and
``io.pressure``): the open and close were two thirds of the system calls and most of the
time. A kernfs file (and a file of the test trees on tmpfs) gives its current text to a
``pread`` at offset 0, so one system call per file and tick is enough. Each descriptor is
kept with the inode of its cgroup directory: a cgroup removed and made again under the same
path (a new inode) is opened anew, and a descriptor whose cgroup was not walked this tick is
closed (:meth:`OpenFiles.sweep`). At most :data:`MAX_OPEN` (and a quarter of the
descriptor limit) are kept; the rest are opened, read and closed each tick.
"""

from __future__ import annotations

import contextlib
import os
import resource
import stat
import weakref
from collections.abc import Callable

MAX_OPEN = 4096
"""Descriptors kept open at most."""

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 65536
WHOLE_BELOW = 2048
"""A read of a cgroup or proc file shorter than this is the whole file: procfs and cgroupfs
serve a read a page at a time (``seq_file``, never splitting a line), so a longer file comes
in reads of nearly 4 KiB and must be read on to its end."""


def _limit() -> int:
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 0
    if soft == resource.RLIM_INFINITY:
        return MAX_OPEN
    return max(0, min(MAX_OPEN, soft // 4))


def _close_all(fds: dict[str, tuple[int, int]]) -> None:
    for fd, _ in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


class OpenFiles:
    """Small cgroup files by path, read with one ``pread`` each while their cgroup lives.

    Args:
        read: How a file is read when it is not kept open (its full, checked read: the
            caller's, which raises for a file too big or not regular).
        limit: Descriptors kept at most (default: :data:`MAX_OPEN`, a quarter of the limit).
    """

    def __init__(self, read: Callable[[str], str], limit: int | None = None) -> None:
        self._read = read
        self.limit = _limit() if limit is None else limit
        """Descriptors kept at most."""
        self._fds: dict[str, tuple[int, int]] = {}
        self._seen: set[str] = set()
        weakref.finalize(self, _close_all, self._fds)

    def __len__(self) -> int:
        return len(self._fds)

    def read(self, path: str, ino: int) -> str:
        """The text of ``path``, a file of the cgroup directory whose inode is ``ino``.

        Raises:
            OSError: as the caller's read does (FileNotFoundError when it is gone).
        """
        hit = self._fds.get(path)
        if hit is not None:
            fd, known = hit
            if known == ino:
                try:
                    data = os.pread(fd, _CHUNK, 0)
                except OSError:
                    data = None  # its cgroup is gone (ENODEV): opened again below
                if data is not None and len(data) < WHOLE_BELOW:
                    self._seen.add(path)
                    return data.decode("utf-8", "replace")
            self._drop(path)
        if len(self._fds) >= self.limit:
            return self._read(path)
        fd = os.open(path, _FLAGS)
        try:
            data = os.read(fd, _CHUNK)
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            os.close(fd)
            raise
        if len(data) >= WHOLE_BELOW or not regular:  # longer, or a FIFO...: read, not kept
            os.close(fd)
            return self._read(path) if len(data) >= WHOLE_BELOW else data.decode("utf-8", "replace")
        self._fds[path] = (fd, ino)
        self._seen.add(path)
        return data.decode("utf-8", "replace")

    def _drop(self, path: str) -> None:
        fd, _ = self._fds.pop(path)
        with contextlib.suppress(OSError):
            os.close(fd)

    def sweep(self) -> None:
        """Close the files not read since the last sweep (their cgroups were not walked)."""
        for path in [p for p in self._fds if p not in self._seen]:
            self._drop(path)
        self._seen = set()

    def close(self) -> None:
        """Close every file kept open."""
        _close_all(self._fds)
        self._seen = set()
