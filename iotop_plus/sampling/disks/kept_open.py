"""Small sysfs attributes kept open between frames and read again with one ``pread``.

A loop device's ``diskseq`` is read at every frame (it is re-attached in place); opening,
checking, reading and closing it was five system calls and a path walk in sysfs, for every
loop device of the host at every frame. A sysfs attribute gives its current value to a
``pread`` at offset 0, so the file is opened once. A device removed makes its open file fail
(``ENODEV``): it is opened again by its path, and closed when its name goes. Only the host's
own ``/sys`` is read this way: a captured tree's file may be replaced by a new one.
"""

from __future__ import annotations

import contextlib
import os
import resource
import stat
import weakref

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_PAGE = 4096
"""A sysfs attribute's size at most (one page)."""
MAX_KEPT = 1024
"""Files kept open at most (and an eighth of the descriptor limit)."""


def _limit() -> int:
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 0
    return MAX_KEPT if soft == resource.RLIM_INFINITY else max(0, min(MAX_KEPT, soft // 8))


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


class KeptOpen:
    """Attribute files by path, each opened once and read with one ``pread`` after that."""

    def __init__(self) -> None:
        self.limit = _limit()
        self._fds: dict[str, int] = {}
        weakref.finalize(self, _close_all, self._fds)

    def __len__(self) -> int:
        return len(self._fds)

    def read(self, path: str) -> str:
        """The text of the regular file ``path`` (bytes that are not UTF-8 as U+FFFD).

        Raises:
            OSError: it cannot be opened or read; ``EINVAL`` when it is not a regular file.
        """
        fd = self._fds.get(path)
        if fd is not None:
            try:
                return os.pread(fd, _PAGE, 0).decode("utf-8", "replace")
            except OSError:
                self.forget(path)  # its device is gone: opened again by its path
        fd = os.open(path, _FLAGS)
        kept = False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(22, "not a regular file", path)
            text = os.pread(fd, _PAGE, 0).decode("utf-8", "replace")
            if len(self._fds) < self.limit:
                self._fds[path] = fd
                kept = True
            return text
        finally:
            if not kept:
                os.close(fd)

    def forget(self, path: str) -> None:
        """Close ``path``'s file if it is kept open."""
        fd = self._fds.pop(path, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def keep_only(self, paths: set[str]) -> None:
        """Close every file kept open but those of ``paths``."""
        for path in [p for p in self._fds if p not in paths]:
            self.forget(path)

    def close(self) -> None:
        """Close every file kept open."""
        _close_all(self._fds)
