"""Loop devices that a test creates on its own backing file and always detaches.

Every test attaches through :func:`attach`. ``losetup --find`` asks the kernel for a free
number and then binds it; on a shared host another process can remove that number's node
(``LOOP_CTL_REMOVE``: ENOENT) or bind it first (EBUSY) in between, so :func:`attach` asks again,
up to :data:`ATTACH_TRIES` times. Removing a node (:func:`remove_node`) opens that window for
every other process on the host: only ``serial`` tests do it (tests/conftest.py SERIAL).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.wait import holds_within

ATTACH_TRIES = 20
"""How often :func:`attach` asks for a free number when the one it got vanished or was taken."""
_RACED = ("No such file or directory", "Device or resource busy", "No such device")
"""losetup's words for ENOENT, EBUSY and ENXIO: the number it was given is gone or taken."""
LOOP_CTL_REMOVE = 0x4C81
"""``<linux/loop.h>``: unregister a detached loop device (its node goes)."""


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
    dev = attach(backing, direct_io=direct_io)
    try:
        start_at_loop_defaults(dev)
        yield dev
    finally:
        detach(dev, backing)
        backing.unlink(missing_ok=True)


def attach(backing: Path, *, direct_io: bool = False, partscan: bool = False) -> str:
    """Attach a free loop device on our own file ``backing``; its name (``loop3``).

    Asks again (up to :data:`ATTACH_TRIES` times) when losetup's free number vanished or was
    taken before it was bound; any other failure raises at once, with losetup's words.
    """
    if not backing.is_file():
        raise FileNotFoundError(f"no backing file {backing}")
    argv = ["losetup", "--find", "--show"]
    if direct_io:
        argv.append("--direct-io=on")
    if partscan:
        argv.append("--partscan")
    said = ""
    for _ in range(ATTACH_TRIES):
        done = subprocess.run([*argv, str(backing)], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.strip().removeprefix("/dev/")
        for dev in bound_to(backing):  # half done (never seen): ours all the same
            detach(dev, backing)
        said = done.stderr.strip()
        if not any(words in said for words in _RACED):
            raise RuntimeError(f"losetup could not attach {backing}: {said}")
    raise RuntimeError(f"losetup could not attach {backing} in {ATTACH_TRIES} tries: {said}")


def bound_to(backing: Path) -> list[str]:
    """The loop devices attached to ``backing`` now (names)."""
    out = []
    path = str(backing.resolve())
    with contextlib.suppress(OSError):
        for entry in Path("/sys/block").iterdir():
            link = entry / "loop" / "backing_file"
            with contextlib.suppress(OSError):
                if entry.name.startswith("loop") and link.read_text().strip() == path:
                    out.append(entry.name)
    return out


def backing_of(dev: str) -> Path:
    """The file loop device ``dev`` is attached to now."""
    return Path((Path("/sys/block") / dev / "loop" / "backing_file").read_text().strip())


def detach(dev: str, backing: Path) -> None:
    """Detach ``dev`` if it is still attached to our ``backing`` file (never someone else's
    device that took the number after ours went)."""
    if dev in bound_to(backing):
        subprocess.run(["losetup", "-d", f"/dev/{dev}"], check=False, capture_output=True)


def remove_node(dev: str) -> None:
    """Unregister our own, already detached loop device ``dev`` (``LOOP_CTL_REMOVE``), as
    udev or systemd would: the device and its node vanish. Only ``serial`` tests call this.

    EBUSY while someone (udev after the detach, another process's ``losetup --find``) has it
    open: asked again until it is gone, for up to 5 s.
    """
    number = int(dev.removeprefix("loop"))
    fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)

    def removed() -> bool:
        try:
            fcntl.ioctl(fd, LOOP_CTL_REMOVE, number)
        except OSError as exc:
            if exc.errno == errno.ENODEV:  # gone already
                return True
            if exc.errno != errno.EBUSY:
                raise
            return False
        return True

    try:
        if not holds_within(removed, 5):
            raise AssertionError(f"{dev} stayed busy: it could not be removed in 5 s")
    finally:
        os.close(fd)


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
