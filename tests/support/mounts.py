"""Unmounting what a test mounted, so that neither the mount nor its loop device outlives it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.wait import holds_within


def unmount(where: str | Path, timeout: float = 10.0) -> bool:
    """Unmount ``where``; True when it was unmounted (or lazily detached).

    A process just killed can hold the mount for a moment after it is reaped: try again until
    ``timeout``, then detach it lazily (``umount -l``) so that it goes once the last user does.
    Never raises: it is called from clean-ups, where the test's own failure matters more.
    """

    def done() -> bool:
        return subprocess.run(["umount", str(where)], capture_output=True).returncode == 0

    if holds_within(done, timeout):
        return True
    return subprocess.run(["umount", "-l", str(where)], capture_output=True).returncode == 0
