"""Loop device nodes a benchmark made, removed when it is done with them.

``losetup --find`` makes a new node (``/sys/block/loopN``) when no free one exists, and
detaching leaves it behind, unbound. A host then lists every one of them in
``/proc/diskstats``, and a TUI describes them all: after a 200-device benchmark, 258 free nodes
took the next benchmark's CPU from 0.6 % to 1.4 % of a core and its first paint from 0.36 s to
0.45 s. So a benchmark removes, at its end, the nodes it bound that were not there before it
began (``LOOP_CTL_REMOVE``, as udev does once a device goes): never a node that was there
before, and never one bound again by someone else since (the kernel refuses that one).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
from collections.abc import Iterable
from pathlib import Path

LOOP_CTL_REMOVE = 0x4C81
"""``ioctl`` on ``/dev/loop-control``: remove the free loop device with this number."""

_LOOP = re.compile(r"loop(\d+)")


def loop_nodes(sys_block: Path = Path("/sys/block")) -> frozenset[str]:
    """The loop devices the kernel lists now (``loop0`` ...)."""
    try:
        return frozenset(name for name in os.listdir(sys_block) if _LOOP.fullmatch(name))
    except OSError:
        return frozenset()


def remove_made(bound: Iterable[str], before: frozenset[str]) -> int:
    """Remove each loop device of ``bound`` (``/dev/loop7`` or ``loop7``) that is not in
    ``before`` and is free now; returns how many went. One that is bound or open again
    (``EBUSY``), or gone already, is left as it is."""
    made = {name.removeprefix("/dev/") for name in bound} - before
    if not made:
        return 0
    try:
        control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return 0
    removed = 0
    try:
        for name in sorted(made):
            match = _LOOP.fullmatch(name)
            if match is None or (Path("/sys/block") / name / "loop").exists():
                continue  # bound again: someone else's now
            try:
                fcntl.ioctl(control, LOOP_CTL_REMOVE, int(match.group(1)))
                removed += 1
            except OSError as exc:
                if exc.errno not in (errno.EBUSY, errno.ENODEV, errno.ENXIO):
                    raise
    finally:
        os.close(control)
    return removed
