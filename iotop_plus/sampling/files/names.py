"""Names of the busiest files: from the processes that hold them open, never guessed.

A file is named by a path only when some process holds it open right now: an open
descriptor (``/proc/PID/fd/N``, whose ``stat`` gives the device and inode and whose link the
path) or a mapping (``/proc/PID/maps``, which prints the device and inode beside the path).
Where it was found is cached and checked again each frame (one ``stat`` and one
``readlink``); a file nobody holds open reads ``inode N on MOUNT (not open)``.

The pids that did the file's I/O are looked at first; a file still unnamed after them is
looked for in every process at most once per :data:`FULL_SCAN_S` (on a host with a few
hundred processes a full scan is tens of ms).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from iotop_plus.roots import Roots

FULL_SCAN_S = 5.0
"""At most one look at every process's descriptors this often."""
MAX_FDS_PER_PID = 4096
"""A process's descriptors looked at, at most (a server may hold a million)."""
MAX_MAPS_BYTES = 1 << 20
"""A process's ``maps`` read, at most."""

DevIno = tuple[int, int, int]
"""(major, minor, inode) of a file, as ``stat`` gives them."""


@dataclass(frozen=True)
class Where:
    """Where an open file was found."""

    pid: int
    fd: int | None
    """Its descriptor; None when found in ``maps``."""
    path: str


def not_open(inode: int, mount: str) -> str:
    """The name of a file nobody holds open."""
    return f"inode {inode} on {mount} (not open)"


class FileNames:
    """Finds and caches the paths of open files, by (major, minor, inode)."""

    def __init__(self, roots: Roots, clock: Callable[[], float] = time.monotonic) -> None:
        self.proc = str(roots.proc)
        self.clock = clock
        self.cache: dict[DevIno, Where] = {}
        self.last_full = float("-inf")

    def names(
        self, wanted: Iterable[DevIno], pids: Mapping[DevIno, Iterable[int]]
    ) -> dict[DevIno, str]:
        """The path of each wanted file that some process holds open now."""
        out: dict[DevIno, str] = {}
        missing: set[DevIno] = set()
        for key in wanted:
            where = self.cache.get(key)
            path = self._check(key, where) if where is not None else None
            if path is None:
                self.cache.pop(key, None)
                missing.add(key)
            else:
                out[key] = path
        if missing:
            hinted = sorted({p for k in missing for p in pids.get(k, ())})
            self._scan(hinted, missing, out, maps=True)
        if missing and self.clock() - self.last_full >= FULL_SCAN_S:
            self.last_full = self.clock()
            self._scan(self._all_pids(), missing, out, maps=False)
        return out

    def _check(self, key: DevIno, where: Where) -> str | None:
        if where.fd is None:
            return self._in_maps(where.pid, {key}).get(key)
        fd = f"{self.proc}/{where.pid}/fd/{where.fd}"
        try:
            st = os.stat(fd)
            path = os.readlink(fd)
        except OSError:
            return None
        if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) != key:
            return None
        return path

    def _all_pids(self) -> list[int]:
        try:
            return [int(e) for e in os.listdir(self.proc) if e.isdigit()]
        except OSError:
            return []

    def _scan(
        self, pids: Iterable[int], missing: set[DevIno], out: dict[DevIno, str], *, maps: bool
    ) -> None:
        for pid in pids:
            if not missing:
                return
            for key, where in self._in_fds(pid, missing).items():
                self.cache[key] = where
                out[key] = where.path
                missing.discard(key)
            if maps and missing:
                for key, path in self._in_maps(pid, missing).items():
                    self.cache[key] = Where(pid, None, path)
                    out[key] = path
                    missing.discard(key)

    def _in_fds(self, pid: int, missing: set[DevIno]) -> dict[DevIno, Where]:
        found: dict[DevIno, Where] = {}
        base = f"{self.proc}/{pid}/fd"
        try:
            with os.scandir(base) as it:
                for n, entry in enumerate(it):
                    if n >= MAX_FDS_PER_PID:
                        break
                    try:
                        st = entry.stat()  # follows the link: the open file itself
                    except OSError:
                        continue
                    key = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
                    if key in missing and key not in found:
                        try:
                            found[key] = Where(pid, int(entry.name), os.readlink(entry.path))
                        except (OSError, ValueError):
                            continue
        except OSError:
            pass
        return found

    def _in_maps(self, pid: int, missing: set[DevIno]) -> dict[DevIno, str]:
        found: dict[DevIno, str] = {}
        try:
            with open(f"{self.proc}/{pid}/maps", "rb") as fh:
                data = fh.read(MAX_MAPS_BYTES)
        except OSError:
            return found
        for line in data.splitlines():
            fields = line.split(None, 5)
            if len(fields) < 6 or fields[4] == b"0":
                continue
            major, _, minor = fields[3].partition(b":")
            try:
                key = (int(major, 16), int(minor, 16), int(fields[4]))
            except ValueError:
                continue
            if key in missing:
                found[key] = os.fsdecode(fields[5].strip())
        return found
