"""Files without root: how far this user's own processes moved through their open files.

Without root there is no tracer. ``/proc/PID/fdinfo/N`` of one's own processes gives each
open file's position; what a position moved between frames is what the process read or
wrote there, page-cache hits included, so it is an estimate (``"estimated": true``). A file
opened read-only counts as read, one opened for writing as written (``flags`` in fdinfo).
"""

from __future__ import annotations

import os
import stat as stat_mod

from iotop_plus.roots import Roots

MAX_FDS = 20_000
"""Descriptors looked at per frame, at most."""

Key = tuple[int, int, int, int]
"""(major, minor, inode, pid)."""


class PositionEstimate:
    """Reads the positions of the user's own processes' open regular files each frame."""

    def __init__(self, roots: Roots) -> None:
        self.proc = str(roots.proc)
        self.uid = os.getuid()
        self.last: dict[tuple[int, int], tuple[Key, int, bool]] = {}

    def read(self) -> dict[Key, tuple[int, int]]:
        """(read bytes, written bytes) per file and pid since the previous call."""
        now: dict[tuple[int, int], tuple[Key, int, bool]] = {}
        moved: dict[Key, tuple[int, int]] = {}
        seen = 0
        try:
            pids = [int(e) for e in os.listdir(self.proc) if e.isdigit()]
        except OSError:
            return moved
        for pid in pids:
            base = f"{self.proc}/{pid}"
            try:
                if os.stat(base).st_uid != self.uid:
                    continue
                fds = os.listdir(f"{base}/fd")
            except OSError:
                continue
            for fd in fds:
                seen += 1
                if seen > MAX_FDS:
                    break
                got = self._one(base, pid, fd)
                if got is None:
                    continue
                key, pos, writing = got
                now[(pid, int(fd))] = got
                was = self.last.get((pid, int(fd)))
                if was is None or was[0] != key or pos <= was[1]:
                    continue
                r, w = moved.get(key, (0, 0))
                moved[key] = (r, w + pos - was[1]) if writing else (r + pos - was[1], w)
        self.last = now
        return moved

    @staticmethod
    def _one(base: str, pid: int, fd: str) -> tuple[Key, int, bool] | None:
        try:
            st = os.stat(f"{base}/fd/{fd}")
            if not stat_mod.S_ISREG(st.st_mode):
                return None
            with open(f"{base}/fdinfo/{fd}", "rb") as fh:
                text = fh.read(4096)
        except OSError:
            return None
        pos = flags = None
        for line in text.splitlines():
            if line.startswith(b"pos:"):
                pos = line[4:].strip()
            elif line.startswith(b"flags:"):
                flags = line[6:].strip()
        if pos is None or flags is None or not pos.isdigit():
            return None
        try:
            mode = int(flags, 8) & os.O_ACCMODE
        except ValueError:
            return None
        key = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino, pid)
        return key, int(pos), mode != os.O_RDONLY
