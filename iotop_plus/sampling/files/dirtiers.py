"""Who dirtied what the flusher writes back.

Buffered writes reach the device up to ``dirty_expire_centisecs`` plus
``dirty_writeback_centisecs`` after they were dirtied (30 + 5 s by default), from the
flusher, whose I/O the tracer can only charge to ``kernel``. :class:`DirtyWindow` keeps, per
(filesystem device, inode, process), the bytes each process dirtied over that window; when an
inode's pages are written back, its written bytes are shared among its dirtiers by what each
dirtied.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from iotop_plus.roots import Roots

FileKey = tuple[int, int]
"""(kernel dev_t of the filesystem, inode)."""
DEFAULT_WINDOW_S = 35.0
"""``dirty_expire_centisecs`` (3000) + ``dirty_writeback_centisecs`` (500), in seconds."""
MAX_ENTRIES = 200_000
"""Dirtying records kept at most (oldest dropped first)."""


def window_s(roots: Roots) -> float:
    """How long dirty pages may wait for the flusher on this host, in seconds."""
    total = 0
    for name in ("dirty_expire_centisecs", "dirty_writeback_centisecs"):
        try:
            text = (roots.proc / "sys" / "vm" / name).read_text()[:32].strip()
        except OSError:
            return DEFAULT_WINDOW_S
        if not text.isdigit():
            return DEFAULT_WINDOW_S
        total += int(text)
    return max(total / 100.0, 1.0)


class DirtyWindow:
    """Bytes dirtied per (file, pid) over the last ``window`` seconds."""

    def __init__(self, window: float) -> None:
        self.window = window
        self.records: deque[tuple[float, FileKey, int, int]] = deque()
        self.totals: dict[FileKey, dict[int, int]] = {}

    def add(self, now: float, dirtied: Mapping[tuple[int, int, int], int]) -> None:
        """This frame's dirtying (per (dev_t, inode, pid)), then forget what is too old."""
        for (dev, ino, pid), n in dirtied.items():
            key = (dev, ino)
            self.records.append((now, key, pid, n))
            per = self.totals.setdefault(key, {})
            per[pid] = per.get(pid, 0) + n
        while self.records and (
            self.records[0][0] < now - self.window or len(self.records) > MAX_ENTRIES
        ):
            _t, key, pid, n = self.records.popleft()
            known = self.totals.get(key)
            if known is None:
                continue
            per = known
            left = per.get(pid, 0) - n
            if left > 0:
                per[pid] = left
            else:
                per.pop(pid, None)
                if not per:
                    del self.totals[key]

    def share(self, written: Mapping[FileKey, int]) -> dict[FileKey, dict[int, int]]:
        """The written-back bytes of each inode, per dirtier (inodes with none known are
        left out)."""
        out: dict[FileKey, dict[int, int]] = {}
        for key, n in written.items():
            per = self.totals.get(key)
            if not per:
                continue
            total = sum(per.values())
            out[key] = {pid: n * d // total for pid, d in per.items()}
        return out
