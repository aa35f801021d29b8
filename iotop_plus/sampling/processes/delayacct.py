"""Delay accounting (``kernel.task_delayacct``): is IO% measurable
(switching it is :mod:`iotop_plus.devices.delayacct`).

Since Linux 5.14 delay accounting is off by default, and every per-task delay counter
(``delayacct_blkio_ticks``, field 42 of ``/proc/PID/task/TID/stat``) stays 0. Kernels
before 5.14 have no sysctl and account delays unless booted with ``nodelayacct``.
"""

from __future__ import annotations

import enum
from pathlib import Path

from iotop_plus.roots import Roots

SYSCTL = "kernel.task_delayacct"


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
