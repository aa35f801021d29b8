"""Delay accounting (``kernel.task_delayacct``): is IO% measurable, and switching it.

Since Linux 5.14 delay accounting is off by default, and every per-task delay counter
(``delayacct_blkio_ticks``, field 42 of ``/proc/PID/task/TID/stat``) stays 0. Kernels
before 5.14 have no sysctl and account delays unless booted with ``nodelayacct``.
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Callable
from pathlib import Path

from iotop_plus.roots import Roots

SYSCTL = "kernel.task_delayacct"

#: The only procfs that is ever written.
LIVE_PROC = Path("/proc")

NOTE = (
    "Delay accounting adds a small cost to every task switch, and the kernel resets it to "
    "off at reboot."
)
"""What the user should know before switching it on."""

OFF_EXPLANATION = (
    "IO% needs delay accounting, which is off (kernel.task_delayacct=0); "
    "as root: sysctl -w kernel.task_delayacct=1"
)
"""Shown instead of an IO% column of zeros."""


class DelayAcct(enum.Enum):
    """Whether the kernel measures per-task block I/O delay."""

    ON = "on"
    OFF = "off"
    UNKNOWN = "unknown"
    """No sysctl (kernel before 5.14 or a captured tree): delays may or may not be counted."""

    @property
    def measurable(self) -> bool:
        """True unless delay accounting is known to be off."""
        return self is not DelayAcct.OFF


def sysctl_path(roots: Roots) -> Path:
    """``/proc/sys/kernel/task_delayacct`` under the roots."""
    return roots.proc / "sys" / "kernel" / "task_delayacct"


def read_delayacct(roots: Roots) -> DelayAcct:
    """The current state of ``kernel.task_delayacct``.

    Without the sysctl, a kernel booted with ``nodelayacct`` is OFF; otherwise UNKNOWN.
    """
    try:
        with open(sysctl_path(roots), "rb") as fh:
            text = fh.read().strip()
    except FileNotFoundError:
        try:
            with open(roots.proc / "cmdline", "rb") as fh:
                if b"nodelayacct" in fh.read().split():
                    return DelayAcct.OFF
        except OSError:
            pass
        return DelayAcct.UNKNOWN
    except OSError:
        return DelayAcct.UNKNOWN
    if text == b"0":
        return DelayAcct.OFF
    if text.isdigit():
        return DelayAcct.ON
    return DelayAcct.UNKNOWN


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
