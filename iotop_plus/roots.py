"""Where the readers look: the real /proc and /sys, or a captured tree."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

PROC_ENV = "IOTOP_PLUS_PROC"
SYS_ENV = "IOTOP_PLUS_SYS"


@dataclass(frozen=True)
class Roots:
    """The two filesystem roots every reader takes instead of hard-coding paths."""

    proc: Path = Path("/proc")
    """Root of the procfs tree (``/proc`` on a live host)."""
    sys: Path = Path("/sys")
    """Root of the sysfs tree (``/sys`` on a live host)."""

    @classmethod
    def resolve(
        cls, proc: str | os.PathLike[str] | None = None, sys: str | os.PathLike[str] | None = None
    ) -> Roots:
        """Build roots from explicit paths, then the environment, then the live defaults."""
        proc_path = proc if proc is not None else os.environ.get(PROC_ENV) or "/proc"
        sys_path = sys if sys is not None else os.environ.get(SYS_ENV) or "/sys"
        return cls(proc=Path(proc_path), sys=Path(sys_path))

    @property
    def is_live(self) -> bool:
        """True when both roots are the host's own /proc and /sys."""
        return self.proc == Path("/proc") and self.sys == Path("/sys")

    @property
    def diskstats(self) -> Path:
        """``/proc/diskstats`` under this root."""
        return self.proc / "diskstats"

    @property
    def sys_block(self) -> Path:
        """``/sys/block`` under this root."""
        return self.sys / "block"

    @property
    def sys_class_block(self) -> Path:
        """``/sys/class/block`` under this root (disks and partitions alike)."""
        return self.sys / "class" / "block"


_FILE_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words: "a FIFO", "a directory"..."""
    return next((name for test, name in _FILE_KINDS if test(mode)), "a special file")


def open_regular(
    path: str | os.PathLike[str],
    flags: int = os.O_RDONLY,
    mode: int = 0o600,
    *,
    dir_fd: int | None = None,
) -> int:
    """Open ``path`` without ever blocking, and refuse anything but a regular file.

    ``open()`` of a FIFO with no writer waits forever, so the file is opened ``O_NONBLOCK``
    and checked with ``fstat`` on that same descriptor; the flag is cleared before it is
    returned, so reads and writes block as usual. Use it for every file opened by a path
    that someone else may control: recordings, journals, web-config, certificates, config.

    Raises:
        OSError: the open failed; ``EINVAL`` "not a regular file (a FIFO)" for anything
            but a regular file (the descriptor is closed).
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        st_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(st_mode):
            raise OSError(
                errno.EINVAL, f"not a regular file ({file_kind(st_mode)})", os.fspath(path)
            )
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_binary(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")`` through :func:`open_regular`: a FIFO or device is an ``OSError``."""
    return os.fdopen(open_regular(path), "rb")
