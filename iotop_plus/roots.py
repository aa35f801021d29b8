"""Where the readers look: the real /proc and /sys, or a captured tree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC_ENV = "IOTOP_PLUS_PROC"
SYS_ENV = "IOTOP_PLUS_SYS"


@dataclass(frozen=True)
class Roots:
    """The two filesystem roots every reader takes instead of hard-coding paths."""

    proc: Path = Path("/proc")
    """Root of the procfs tree (``/proc`` on a live host)."""
    sys: Path = Path("/sys")
    """Root of the sysfs tree (``/sys`` on a live host)."""

    @classmethod
    def resolve(
        cls, proc: str | os.PathLike[str] | None = None, sys: str | os.PathLike[str] | None = None
    ) -> Roots:
        """Build roots from explicit paths, then the environment, then the live defaults."""
        proc_path = proc if proc is not None else os.environ.get(PROC_ENV) or "/proc"
        sys_path = sys if sys is not None else os.environ.get(SYS_ENV) or "/sys"
        return cls(proc=Path(proc_path), sys=Path(sys_path))

    @property
    def is_live(self) -> bool:
        """True when both roots are the host's own /proc and /sys."""
        return self.proc == Path("/proc") and self.sys == Path("/sys")

    @property
    def diskstats(self) -> Path:
        """``/proc/diskstats`` under this root."""
        return self.proc / "diskstats"

    @property
    def sys_block(self) -> Path:
        """``/sys/block`` under this root."""
        return self.sys / "block"

    @property
    def sys_class_block(self) -> Path:
        """``/sys/class/block`` under this root (disks and partitions alike)."""
        return self.sys / "class" / "block"
