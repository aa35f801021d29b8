"""A real host with hostile names: a cgroup, a process (comm) and a mount point whose names
hold bytes that are not UTF-8, ESC, BEL and a C1 control, with the process reading a loop
device of ours from inside that cgroup. Everything is removed on exit."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import V1, V2, detect_layout
from tests.support.loopdev import loop_device
from tests.support.wait import holds_within

CGROUP = b"ux-\xff\xfe\x1b]0;X\x07\xc2\x9b"
"""Invalid UTF-8, then ESC ] 0 ; X BEL (sets a terminal's title), then U+009B (CSI, C1)."""
COMM = b"rd\x1b]0;Y\x07\xff\xc2\x9b"
"""At most 15 bytes (TASK_COMM_LEN)."""
MOUNT = b"mnt-\xff\x1b[31m\x07\xc2\x9b"

READER = r"""
import ctypes, mmap, os, sys, time
with open(os.fsencode(sys.argv[1]) + b"/cgroup.procs", "w") as fh:
    fh.write(str(os.getpid()))
ctypes.CDLL(None).prctl(15, os.fsencode(sys.argv[2]), 0, 0, 0)  # PR_SET_NAME
fd = os.open(sys.argv[3], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
size = os.lseek(fd, 0, os.SEEK_END)
offset = 0
while True:
    os.preadv(fd, [buf], offset)
    offset = (offset + 65536) % size
    time.sleep(0.002)
"""


def printable_bytes(raw: bytes) -> str:
    """What the tool shows for a name held as ``raw``."""
    from iotop_plus.text import printable

    return printable(os.fsdecode(raw))


@dataclass(frozen=True)
class HostileHost:
    """What :func:`hostile_host` made."""

    device: str
    """The loop device the hostile process reads."""
    cgroup: str
    """The cgroup's path under the I/O tree (``/ux-...``), as ``os.fsdecode`` gives it."""
    cgroup_dir: bytes
    mount: Path
    pid: int


def _throttle_rule(version: str, cgroup_dir: bytes, devno: str) -> None:
    """A generous read limit on ``devno`` for the cgroup: v1 blkio counts a device only once
    some cgroup has a throttle rule on it."""
    if version == V1:
        (Path(os.fsdecode(cgroup_dir)) / "blkio.throttle.read_bps_device").write_text(
            f"{devno} 10000000000\n"
        )


_made = itertools.count()


@contextlib.contextmanager
def hostile_host(tmp_path: Path) -> Iterator[HostileHost]:
    """Set up the hostile names (root only; skips otherwise) and take them down again, each
    step undone even when a later one fails. The cgroup's name ends in ``-PID-N`` (tests run
    in parallel); the hostile bytes come first."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a cgroup, a mount)")
    layout = detect_layout(Roots())
    if layout.version not in (V1, V2):
        pytest.skip(f"no per-cgroup I/O here: {layout.notice}")
    name = CGROUP + f"-{os.getpid()}-{next(_made)}".encode()
    with contextlib.ExitStack() as undo:
        dev = undo.enter_context(loop_device(tmp_path, 64))
        devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
        subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
        mount = Path(os.fsdecode(os.fsencode(tmp_path) + b"/" + MOUNT))
        mount.mkdir()
        undo.callback(mount.rmdir)
        subprocess.run(["mount", "-o", "ro", f"/dev/{dev}", mount], check=True)
        undo.callback(lambda: subprocess.run(["umount", mount], check=False, capture_output=True))
        cgroup_dir = os.fsencode(layout.root) + b"/" + name
        os.mkdir(cgroup_dir)
        undo.callback(lambda: holds_within(lambda: _rmdir(cgroup_dir), 10))
        _throttle_rule(layout.version, cgroup_dir, devno)
        argv = [sys.executable, "-c", READER, os.fsdecode(cgroup_dir), os.fsdecode(COMM)]
        reader = subprocess.Popen([*argv, f"/dev/{dev}"])
        undo.callback(reader.wait, 10)
        undo.callback(reader.kill)
        comm = Path(f"/proc/{reader.pid}/comm")
        assert holds_within(lambda: comm.read_bytes().rstrip(b"\n") == COMM, 10), "its comm"
        yield HostileHost(dev, "/" + os.fsdecode(name), cgroup_dir, mount, reader.pid)


def _rmdir(path: bytes) -> bool:
    """Remove an empty cgroup; False while the kernel still counts a task in it."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
