"""Synthetic /proc and /sys trees with many devices, for tests and benchmarks.

The tree has ``proc/diskstats`` (20-field lines, kernel 5.5+ format), ``proc/uptime``,
``proc/self/mountinfo``, ``proc/swaps`` and, per device, ``sys/block/NAME/{dev,size,stat,
queue/...}`` plus the ``sys/class/block/NAME`` entries. Counters advance between calls to
:meth:`SyntheticTree.advance`, so a reader sees live-looking rates.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from iotop_plus.roots import Roots


class SyntheticTree:
    """A fake host with ``n_devices`` disks named ``sd<letters>`` (``sda``, ``sdb``...)."""

    def __init__(
        self, base: Path, n_devices: int, busy_fraction: float = 1.0, seed: int = 1
    ) -> None:
        self.base = base
        self.roots = Roots(proc=base / "proc", sys=base / "sys")
        self.rng = random.Random(seed)
        self.names = [_disk_name(i) for i in range(n_devices)]
        n_busy = round(n_devices * busy_fraction)
        self.busy = set(self.names[:n_busy])
        # 17 counters per device; start with some history so devices count as "ever used".
        self.values = {
            name: [1000, 10, 8000, 500, 2000, 20, 16000, 900, 0, 1200, 1400, 0, 0, 0, 0, 50, 10]
            for name in self.names
        }
        self.uptime = 1000.0
        self._write_static()
        self._write_counters()

    def _write_static(self) -> None:
        proc, sys = self.roots.proc, self.roots.sys
        (proc / "self").mkdir(parents=True, exist_ok=True)
        (proc / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
        (proc / "sys" / "kernel" / "osrelease").write_text("6.1.0-synthetic\n")
        (proc / "sys" / "kernel" / "hostname").write_text("synthetic\n")
        (proc / "self" / "mountinfo").write_text("")
        (proc / "swaps").write_text("Filename Type Size Used Priority\n")
        (sys / "class" / "block").mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(self.names):
            d = sys / "block" / name
            (d / "queue").mkdir(parents=True, exist_ok=True)
            (d / "device").mkdir(exist_ok=True)
            (d / "dev").write_text(f"{8 + 16 * (i // 16)}:{(i % 16) * 16}\n")
            (d / "size").write_text(f"{(i + 1) * 2097152}\n")
            for attr, value in (
                ("rotational", "1"),
                ("logical_block_size", "512"),
                ("physical_block_size", "4096"),
                ("nr_requests", "64"),
                ("read_ahead_kb", "128"),
                ("max_sectors_kb", "1280"),
                ("max_hw_sectors_kb", "32767"),
                ("scheduler", "none [mq-deadline] bfq"),
            ):
                (d / "queue" / attr).write_text(value + "\n")
            (d / "device" / "model").write_text(f"SYNTH DISK {i}\n")
            (d / "device" / "vendor").write_text("SYNTH\n")
            link = sys / "class" / "block" / name
            if not link.exists():
                os.symlink(os.path.relpath(d, link.parent), link)

    def _write_counters(self) -> None:
        lines = []
        for i, name in enumerate(self.names):
            major, minor = 8 + 16 * (i // 16), (i % 16) * 16
            v = self.values[name]
            lines.append(f"{major:4d} {minor:7d} {name} " + " ".join(map(str, v)))
            (self.roots.sys / "block" / name / "stat").write_text(
                " ".join(f"{x:8d}" for x in v) + "\n"
            )
        _atomic_write(self.roots.proc / "diskstats", "\n".join(lines) + "\n")
        _atomic_write(self.roots.proc / "uptime", f"{self.uptime:.2f} {self.uptime * 2:.2f}\n")

    def advance(self, seconds: float = 1.0, write_sys_stat: bool = False) -> None:
        """Move every busy device's counters forward by ``seconds`` of plausible load."""
        self.uptime += seconds
        for name in self.busy:
            v = self.values[name]
            reads = self.rng.randint(50, 500)
            writes = self.rng.randint(10, 300)
            v[0] += reads
            v[1] += reads // 10
            v[2] += reads * 8
            v[3] += reads // 4
            v[4] += writes
            v[5] += writes // 5
            v[6] += writes * 16
            v[7] += writes // 2
            v[8] = self.rng.randint(0, 4)
            v[9] += int(seconds * 1000 * self.rng.uniform(0.1, 0.9))
            v[10] += reads // 4 + writes // 2
            v[15] += writes // 20
            v[16] += writes // 40
        if write_sys_stat:
            self._write_counters()
        else:
            lines = []
            for i, name in enumerate(self.names):
                major, minor = 8 + 16 * (i // 16), (i % 16) * 16
                lines.append(
                    f"{major:4d} {minor:7d} {name} " + " ".join(map(str, self.values[name]))
                )
            _atomic_write(self.roots.proc / "diskstats", "\n".join(lines) + "\n")
            _atomic_write(self.roots.proc / "uptime", f"{self.uptime:.2f} {self.uptime * 2:.2f}\n")


def _disk_name(i: int) -> str:
    """sda, sdb, ... sdz, sdaa, sdab ... like the kernel names SCSI disks."""
    letters = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return "sd" + letters


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
