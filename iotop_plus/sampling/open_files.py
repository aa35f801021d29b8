"""Small kernfs files kept open between frames and read again with ``pread`` at offset 0.

A kernfs file (cgroupfs, sysfs; and a file of the test trees on tmpfs) gives its current text
to a ``pread`` at offset 0, so one system call per file and frame is enough where opening,
checking, reading and closing it took five and a path walk. Two readers keep files open:
- the cgroup reader, for ``io.stat`` and ``io.pressure``: at 1,000 busy cgroups a tick opened,
  read and closed 2,000 files, and the open and close were two thirds of the system calls and
  most of the time. Each descriptor is kept with the inode of its cgroup directory: a cgroup
  removed and made again under the same path (a new inode) is opened anew;
- the sampler, for each loop device's ``diskseq``, read at every frame (a loop device is
  re-attached in place): 1.1 us a file against 10.4 us (docs/performance.md). A device
  removed makes its open file fail (``ENODEV``), and it is opened again by its path.
A descriptor not read since the last :meth:`OpenFiles.sweep` is closed. At most
:data:`MAX_OPEN` (and a share of the descriptor limit, :func:`descriptor_budget`) are kept;
the rest are opened, read and closed each time.
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


def descriptor_budget(most: int = MAX_OPEN, share: int = 4) -> int:
    """Descriptors a reader may keep open: ``most``, and a ``share``-th of the soft limit."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 0
    if soft == resource.RLIM_INFINITY:
        return most
    return max(0, min(most, soft // share))


def _close_all(fds: dict[str, tuple[int, int]]) -> None:
    for fd, _ in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


class OpenFiles:
    """Small kernfs files by path, read with one ``pread`` each while they last.

    Args:
        read: How a file is read when it is not kept open (its full, checked read: the
            caller's, which raises for a file too big or not regular).
        limit: Descriptors kept at most (default: :data:`MAX_OPEN`, a quarter of the limit).
    """

    def __init__(self, read: Callable[[str], str], limit: int | None = None) -> None:
        self._read = read
        self.limit = descriptor_budget() if limit is None else limit
        """Descriptors kept at most."""
        self._fds: dict[str, tuple[int, int]] = {}
        self._seen: set[str] = set()
        weakref.finalize(self, _close_all, self._fds)

    def __len__(self) -> int:
        return len(self._fds)

    def read(self, path: str, ino: int = 0) -> str:
        """The text of ``path``, a file of the directory whose inode is ``ino`` (a cgroup's:
        made again under its path, it is another; 0 where the path alone says which file).

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
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
            data = os.read(fd, _CHUNK) if regular else b""
        except OSError:
            os.close(fd)
            raise
        if not regular or len(data) >= WHOLE_BELOW:  # a FIFO..., or longer: the caller's read
            os.close(fd)
            return self._read(path)
        self._fds[path] = (fd, ino)
        self._seen.add(path)
        return data.decode("utf-8", "replace")

    def _drop(self, path: str) -> None:
        fd, _ = self._fds.pop(path)
        with contextlib.suppress(OSError):
            os.close(fd)

    def sweep(self) -> None:
        """Close the files not read since the last sweep (their cgroups were not walked, their
        devices went)."""
        for path in [p for p in self._fds if p not in self._seen]:
            self._drop(path)
        self._seen = set()

    def close(self) -> None:
        """Close every file kept open."""
        _close_all(self._fds)
        self._seen = set()
