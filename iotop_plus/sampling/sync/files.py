"""Where a traced sync happened: the device a kernel ``dev_t`` names, and the file an inode
or a descriptor is.

A file is found through ``/proc/PID/fd`` of the process that synced it: the target of the
link that is the same device and inode (the path as that process sees it). Found paths are
cached for :data:`FOUND_TTL_S` and checked with one ``stat`` before each use (another file
at that path drops them); a file not found
is "inode N on MOUNT", never a guessed path. Lookups that found nothing are not repeated for
:data:`MISS_TTL_S`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from iotop_plus.text import printable

if TYPE_CHECKING:
    from iotop_plus.sampling.disks.sampler import Sample
    from iotop_plus.sampling.topology.inventory import Inventory

K = TypeVar("K")
T = TypeVar("T")

KDEV_MINOR_BITS = 20
"""The kernel's ``dev_t``: ``major << 20 | minor`` (``include/linux/kdev_t.h``)."""
CACHE_MAX = 4096
"""Paths (and misses) kept at most; the oldest go first."""
MISS_TTL_S = 30.0
"""A (file, pid) whose descriptors did not hold the file is looked at again after this."""
FOUND_TTL_S = 60.0
"""A found path is looked up again after this (a rename we cannot see drops it then)."""
FD_SCAN_MAX = 65536
"""Descriptors looked at, at most, per lookup (a process with more is cut short)."""


def kdev(major: int, minor: int) -> int:
    """The kernel's ``dev_t`` of ``major:minor``."""
    return (major << KDEV_MINOR_BITS) | minor


def kdev_of_st(st_dev: int) -> int:
    """The kernel's ``dev_t`` of a ``stat`` result's ``st_dev``."""
    return kdev(os.major(st_dev), os.minor(st_dev))


def kdev_names(sample: Sample) -> dict[int, str]:
    """Kernel ``dev_t`` to device name, for the devices in ``sample``."""
    return {kdev(c.major, c.minor): name for name, c in sample.counters.items()}


def whole_disk(name: str, inventory: Inventory) -> str:
    """The whole disk a partition is on; any other device is its own."""
    dev = inventory.get(name)
    if dev is not None and dev.parent and dev.is_partition:
        return dev.parent
    return name


def mount_of(name: str, inventory: Inventory) -> str:
    """Where device ``name`` is mounted (its first mount point), else its name."""
    dev = inventory.get(name)
    if dev is not None and dev.mounts:
        return printable(dev.mounts[0])
    return name


class FileNames:
    """Paths of the files traced syncs named (see the module's doc)."""

    def __init__(self, proc: Path, clock: float | None = None) -> None:
        self._proc = proc
        self._found: dict[tuple[int, int], tuple[str, float]] = {}
        self._missed: dict[tuple[int, int, int], float] = {}
        self._clock = clock

    def _now(self) -> float:
        return self._clock if self._clock is not None else time.monotonic()

    def path(self, dev: int, ino: int, pid: int) -> str | None:
        """The path of inode ``ino`` on kernel ``dev`` through ``pid``'s descriptors, or None."""
        key = (dev, ino)
        known = self._found.get(key)
        if known is not None:
            path, at = known
            if self._now() - at < FOUND_TTL_S and not _other_file(path, dev, ino):
                return path
            del self._found[key]
        miss = self._missed.get((dev, ino, pid))
        if miss is not None and self._now() - miss < MISS_TTL_S:
            return None
        found = self._scan(dev, ino, pid)
        if found is None:
            _remember(self._missed, (dev, ino, pid), self._now())
            return None
        self._missed.pop((dev, ino, pid), None)
        _remember(self._found, key, (found, self._now()))
        return found

    def descriptor(self, pid: int, fd: int) -> tuple[int, int, str] | None:
        """``(kernel dev, inode, path)`` of ``pid``'s descriptor ``fd`` now, or None."""
        link = self._proc / str(pid) / "fd" / str(fd)
        try:
            target = os.readlink(link)
            st = os.stat(link)
        except OSError:
            return None
        return kdev_of_st(st.st_dev), st.st_ino, target

    def _scan(self, dev: int, ino: int, pid: int) -> str | None:
        fds = self._proc / str(pid) / "fd"
        try:
            names = os.listdir(fds)
        except OSError:
            return None
        for name in names[:FD_SCAN_MAX]:
            link = fds / name
            try:
                st = os.stat(link)
                if st.st_ino != ino or kdev_of_st(st.st_dev) != dev:
                    continue
                target = os.readlink(link)
            except OSError:
                continue
            return target
        return None


def _other_file(path: str, dev: int, ino: int) -> bool:
    """Whether ``path`` is now, as this process sees it, a file other than inode ``ino`` on
    kernel ``dev`` (a path we cannot see, in another mount namespace or deleted, is not)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_ino != ino or kdev_of_st(st.st_dev) != dev


def _remember(cache: dict[K, T], key: K, value: T) -> None:
    if len(cache) >= CACHE_MAX:
        del cache[next(iter(cache))]
    cache[key] = value
