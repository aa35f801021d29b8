"""Writers of sysfs and procfs files: only the live trees, never through a symlink.

Changes go only to the live /sys and /proc, never through a captured tree (``--sys-root``)
and never via a symlink. The writer is injectable so unit tests can still change settings in
temporary trees (:func:`write_tree_file`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from iotop_plus.roots import Roots

Writer = Callable[[Path, str], None]
"""Writes a value to one setting file; raises OSError as a write(2) would."""


class NotLiveError(OSError):
    """A write aimed outside the live sysfs or procfs."""


def _same_fs(fd: int, root: Path) -> bool:
    try:
        return os.fstat(fd).st_dev == os.stat(root).st_dev
    except OSError:
        return False


def write_live_file(path: Path, value: str, root: Path = Path("/sys")) -> None:
    """The live writer: write ``value`` to an existing file of the live ``root`` (``/sys``).

    Opened ``O_WRONLY|O_NOFOLLOW`` and never created; the descriptor must be a
    regular file on the same filesystem as ``root``, so neither a symlink nor a path that
    leaves the kernel's tree is ever written through.

    Raises:
        OSError: ELOOP for a symlink, EXDEV (:class:`NotLiveError`) outside ``root``, or the
            write's own error.
    """
    if not str(path).startswith(str(root) + "/"):
        raise NotLiveError(errno.EXDEV, f"{path} is not under the live {root}")
    # No O_TRUNC: it would cut a file before the checks below could refuse it. A sysfs store
    # takes the whole write at offset 0 anyway.
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or not _same_fs(fd, root):
            raise NotLiveError(errno.EXDEV, f"{path} is not a file of the live {root}")
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def not_live_reason(roots: Roots) -> str | None:
    """Why settings cannot be changed through ``roots``, or None for the live /sys and /proc."""
    if roots.is_live:
        return None
    return (
        f"changes go only to the live /sys and /proc, not to a captured tree "
        f"(--sys-root {roots.sys}, --proc-root {roots.proc})"
    )


def write_tree_file(path: Path, value: str) -> None:
    """A writer for temporary trees in tests: like the live one, without the /sys check."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


__all__ = [
    "NotLiveError",
    "Writer",
    "not_live_reason",
    "write_live_file",
    "write_tree_file",
]
