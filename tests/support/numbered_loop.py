"""Loop devices with a chosen number (``loop2`` and ``loop22``), made and removed by the test.

``losetup --find`` takes whatever number is free; a test about names that are prefixes of each
other needs chosen ones. :func:`prefix_pair` attaches ``loopN`` and ``loopNN`` on new sparse
files of its own, creating a device the kernel does not have yet through ``/dev/loop-control``
(and its node with mknod when devtmpfs did not), and puts everything back on exit: detached,
a device it added removed, a node it made unlinked. A number that is already attached (someone
else's) is never touched: the next pair is tried. Removing a device opens the window where
another process's free number vanishes before it binds it (tests/support/loopdev.py), so only
``serial`` tests use these (tests/conftest.py SERIAL).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.support.loopdev import require_loop_devices, start_at_loop_defaults

LOOP_CTL_ADD = 0x4C80
LOOP_CTL_REMOVE = 0x4C81
LOOP_MAJOR = 7

PAIRS = ((2, 22), (3, 33), (4, 44), (5, 55), (6, 66), (7, 77), (8, 88), (9, 99), (700, 7000))
"""Numbers tried, in order: the second's name starts with the first's (the last pair for a host
where someone else holds the first 100 loop devices)."""


class NumberTaken(Exception):
    """The loop device of that number is attached by someone else."""


def _attached(number: int) -> bool:
    backing = Path(f"/sys/block/loop{number}/loop/backing_file")
    return backing.exists()


@contextmanager
def numbered_loop(directory: Path, number: int, size_mb: int = 16) -> Iterator[str]:
    """Attach ``/dev/loop<number>`` on a new sparse file in ``directory``; yields its name.

    Raises :class:`NumberTaken` when that device is already attached (left alone).
    """
    require_loop_devices()
    if _attached(number):
        raise NumberTaken(f"loop{number}")
    node = Path(f"/dev/loop{number}")
    added = False
    control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(control, LOOP_CTL_ADD, number)
        added = True
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            os.close(control)
            raise
    made_node = False
    backing = directory / f"loop{number}-backing.img"
    try:
        if not node.exists():
            os.mknod(node, 0o660 | stat.S_IFBLK, os.makedev(LOOP_MAJOR, number))
            made_node = True
        with open(backing, "xb") as fh:  # never reuse a file we did not create
            fh.truncate(size_mb * 1024 * 1024)
        done = subprocess.run(["losetup", str(node), str(backing)], capture_output=True, text=True)
        if done.returncode != 0:
            raise NumberTaken(f"loop{number}: {done.stderr.strip()}")
        try:
            start_at_loop_defaults(f"loop{number}")
            yield f"loop{number}"
        finally:
            subprocess.run(["losetup", "-d", str(node)], check=False, capture_output=True)
    finally:
        backing.unlink(missing_ok=True)
        if added:  # only a device this helper added; EBUSY if someone attached it meanwhile
            with contextlib.suppress(OSError):
                fcntl.ioctl(control, LOOP_CTL_REMOVE, number)
        os.close(control)
        if made_node and not Path(f"/sys/block/loop{number}").exists():
            node.unlink(missing_ok=True)


@contextmanager
def prefix_pair(directory: Path, size_mb: int = 16) -> Iterator[tuple[str, str]]:
    """Attach two loop devices whose names are prefixes (``loop2``, ``loop22``); yields both."""
    for short, long in PAIRS:
        with ExitStack() as stack:
            try:
                first = stack.enter_context(numbered_loop(directory, short, size_mb))
                second = stack.enter_context(numbered_loop(directory, long, size_mb))
            except NumberTaken:
                continue
            yield first, second
            return
    raise RuntimeError(f"every pair of loop numbers in {PAIRS} is taken")
