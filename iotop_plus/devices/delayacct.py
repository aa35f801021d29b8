"""Switching delay accounting (``kernel.task_delayacct``), on the user's request.

Reading it is :mod:`iotop_plus.sampling.processes.delayacct`; the journaled switch (undone at exit)
is
:mod:`iotop_plus.devices.journaled`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.delayacct import SYSCTL, DelayAcct, read_delayacct, sysctl_path

#: The only procfs that is ever written.
LIVE_PROC = Path("/proc")


class DelayAcctError(Exception):
    """The sysctl could not be changed; the message is one line for the user."""


def can_switch(roots: Roots) -> str | None:
    """None when this process may switch delay accounting, else the reason why not."""
    path = sysctl_path(roots)
    if not os.path.lexists(path):
        return f"this kernel has no {SYSCTL} sysctl (it predates 5.14)"
    if roots.proc != LIVE_PROC:
        return f"changes go only to the live /proc, not to a captured tree ({roots.proc})"
    if os.geteuid() != 0 and not os.access(path, os.W_OK):
        return f"switching {SYSCTL} needs root"
    return None


def set_delayacct(
    roots: Roots, enabled: bool, *, writer: Callable[[Path, str], None] | None = None
) -> DelayAcct:
    """Write ``kernel.task_delayacct`` and return the state read back.

    Only the live /proc is written, never through a symlink (``O_NOFOLLOW``); tests inject
    ``writer`` to switch it in a temporary tree.

    Raises:
        DelayAcctError: when the sysctl is missing, not writable, in a captured tree, or did
            not take the value.
    """
    path = sysctl_path(roots)
    reason = can_switch(roots) if writer is None else None
    if writer is not None and not os.path.lexists(path):
        reason = f"this kernel has no {SYSCTL} sysctl (it predates 5.14)"
    if reason:
        raise DelayAcctError(reason)
    try:
        (writer or _write_live)(path, "1\n" if enabled else "0\n")
    except OSError as exc:
        raise DelayAcctError(f"cannot write {SYSCTL}: {exc.strerror or exc}") from None
    state = read_delayacct(roots)
    wanted = DelayAcct.ON if enabled else DelayAcct.OFF
    if state is not wanted:
        raise DelayAcctError(f"{SYSCTL} reads back {state.value} after writing {wanted.value}")
    return state


def _write_live(path: Path, value: str) -> None:
    # Never through a symlink, never outside the live procfs, never created. No O_TRUNC: it
    # would cut the file before the checks could refuse it.
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_dev != os.stat(LIVE_PROC).st_dev:
            raise DelayAcctError(f"refused: {path} is not a file of the live /proc")
        os.write(fd, value.encode())
    finally:
        os.close(fd)
