"""Loop devices that a test creates on its own backing file and always detaches."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def can_use_loop_devices() -> str | None:
    """None when loop devices can be made here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root to attach loop devices"
    if shutil.which("losetup") is None:
        return "losetup is not installed"
    if not Path("/dev/loop-control").exists():
        return "no /dev/loop-control"
    return None


def require_loop_devices() -> None:
    """Skip the calling test, with the reason, when loop devices cannot be made."""
    reason = can_use_loop_devices()
    if reason:
        pytest.skip(reason)


@contextmanager
def loop_device(
    directory: Path,
    size_mb: int = 64,
    name: str = "backing.img",
    direct_io: bool = False,
    filled: bool = False,
) -> Iterator[str]:
    """Attach a loop device on a new file in ``directory``; yields e.g. ``loop3``.

    The file is sparse unless ``filled``: reads of a hole never reach the disk, so a
    direct-I/O loop device on a sparse file is bound by CPU, not by queueing. ``filled``
    writes every block, so its direct reads wait on the real disk underneath.
    The device is detached and the file removed on exit, whatever happened.
    """
    require_loop_devices()
    backing = directory / name
    with open(backing, "xb") as fh:  # never reuse a file we did not create
        if filled:
            block = b"\xa5" * (1024 * 1024)
            for _ in range(size_mb):
                fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
        else:
            fh.truncate(size_mb * 1024 * 1024)
    argv = ["losetup", "--find", "--show"]
    if direct_io:
        argv.append("--direct-io=on")
    dev = subprocess.run(
        [*argv, str(backing)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        start_at_loop_defaults(dev.removeprefix("/dev/"))
        yield dev.removeprefix("/dev/")
    finally:
        subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
        backing.unlink(missing_ok=True)


# The loop driver's defaults for the settings that outlive an attachment. (read_ahead_kb and
# max_sectors_kb are recomputed from the backing file's limits at each attach.)
LOOP_DEFAULTS = (("scheduler", "none"), ("nr_requests", "128"))


def start_at_loop_defaults(device: str) -> None:
    """Put the queue settings of a loop device we just attached back to the driver defaults.

    Queue settings belong to the loopN node and survive ``losetup -d``: whoever used loopN
    before (a test that crashed, an engineer's experiment) may have left mq-deadline or
    nr_requests=4 behind, and the next attachment would inherit it.
    """
    queue = Path("/sys/block") / device / "queue"
    for name, value in LOOP_DEFAULTS:
        with contextlib.suppress(OSError):
            (queue / name).write_text(value)
