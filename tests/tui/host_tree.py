"""Builds tests/fixtures/tui_host: a small captured host for the TUI's tests and snapshots.

Disks: sda (spinning; sda1 on /boot, sda2 under dm-0), sdb (spinning, saturated), sdc (never
used), nvme0n1 (NVMe, nvme0n1p1 on /), dm-0 (vg0-data on sda2, on /data) and loop0.
``proc/diskstats`` and ``proc/diskstats.next`` are two states one second apart.

Run ``python -m tests.tui.host_tree`` to regenerate the committed tree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

BASE = Path(__file__).resolve().parent.parent / "fixtures" / "tui_host"

# name: (major, minor, size in sectors, rotational, nr_requests, scheduler, model)
DISKS = {
    "sda": (8, 0, 1953525168, 1, 64, "none [mq-deadline] bfq", "ST1000DM010-2EP1"),
    "sdb": (8, 16, 3907029168, 1, 64, "none [mq-deadline] bfq", "WDC WD20EZRZ-00Z"),
    "sdc": (8, 32, 3907029168, 1, 64, "none [mq-deadline] bfq", "WDC WD20EZRZ-00Z"),
    "nvme0n1": (259, 0, 1000215216, 0, 1023, "[none] mq-deadline", "Samsung SSD 980 1TB"),
    "dm-0": (253, 0, 409600000, 1, 128, "none", None),
    "loop0": (7, 0, 131072, 0, 128, "[none] mq-deadline", None),
}
PARTS = {
    "sda1": ("sda", 8, 1, 2097152),
    "sda2": ("sda", 8, 2, 1951426560),
    "nvme0n1p1": ("nvme0n1", 259, 1, 1000213168),
}

# 17 counters per device: state A, and the per-second step to state B.
STATE_A = {
    "sda": [
        52000,
        900,
        4100000,
        310000,
        81000,
        12000,
        9800000,
        420000,
        1,
        260000,
        760000,
        0,
        0,
        0,
        0,
        4100,
        9000,
    ],
    "sda1": [1200, 10, 90000, 4000, 40, 2, 3000, 200, 0, 3000, 4200, 0, 0, 0, 0, 0, 0],
    "sda2": [
        50700,
        890,
        4000000,
        305000,
        80900,
        11990,
        9790000,
        419000,
        1,
        255000,
        750000,
        0,
        0,
        0,
        0,
        0,
        0,
    ],
    "sdb": [
        910000,
        5000,
        70000000,
        9000000,
        300000,
        40000,
        20000000,
        6000000,
        58,
        9000000,
        60000000,
        0,
        0,
        0,
        0,
        900,
        12000,
    ],
    "sdc": [0] * 17,
    "nvme0n1": [
        3100000,
        12000,
        190000000,
        900000,
        2200000,
        180000,
        150000000,
        2100000,
        3,
        1900000,
        3100000,
        5000,
        0,
        80000000,
        1200,
        41000,
        30000,
    ],
    "nvme0n1p1": [
        3099000,
        12000,
        189990000,
        899000,
        2199000,
        180000,
        149990000,
        2099000,
        3,
        1899000,
        3099000,
        5000,
        0,
        80000000,
        1200,
        0,
        0,
    ],
    "dm-0": [
        50000,
        0,
        3990000,
        330000,
        92000,
        0,
        9780000,
        500000,
        1,
        270000,
        840000,
        0,
        0,
        0,
        0,
        0,
        0,
    ],
    "loop0": [0] * 17,
}
STEP = {
    "sda": [120, 4, 7680, 1800, 40, 10, 2560, 1200, 0, 600, 3000, 0, 0, 0, 0, 2, 30],
    "sda1": [0] * 17,
    "sda2": [120, 4, 7680, 1800, 40, 10, 2560, 1200, 0, 600, 3000, 0, 0, 0, 0, 0, 0],
    "sdb": [150, 2, 9600, 14000, 30, 3, 960, 4200, 0, 1000, 60000, 0, 0, 0, 0, 0, 0],
    "sdc": [0] * 17,
    "nvme0n1": [5200, 30, 83200, 900, 2100, 400, 67200, 1260, 0, 450, 2200, 10, 0, 20480, 2, 40, 8],
    "nvme0n1p1": [
        5200,
        30,
        83200,
        900,
        2100,
        400,
        67200,
        1260,
        0,
        450,
        2200,
        10,
        0,
        20480,
        2,
        0,
        0,
    ],
    "dm-0": [120, 0, 7680, 1900, 50, 0, 2560, 1500, 0, 620, 3400, 0, 0, 0, 0, 0, 0],
    "loop0": [0] * 17,
}


def diskstats(step: int = 0) -> str:
    """The diskstats text of state A advanced by ``step`` seconds."""
    lines = []
    for name in ("loop0", "sda", "sda1", "sda2", "sdb", "sdc", "nvme0n1", "nvme0n1p1", "dm-0"):
        major, minor = (DISKS[name][:2]) if name in DISKS else PARTS[name][1:3]
        values = [a + step * s for a, s in zip(STATE_A[name], STEP[name], strict=True)]
        values[8] = STATE_A[name][8]  # in-flight is a gauge
        lines.append(f"{major:4d} {minor:7d} {name} " + " ".join(map(str, values)))
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build(base: Path = BASE) -> Path:
    """Write the tree under ``base`` (replacing it)."""
    if base.exists():
        shutil.rmtree(base)
    proc, sys = base / "proc", base / "sys"
    _write(proc / "diskstats", diskstats(0))
    _write(proc / "diskstats.next", diskstats(1))
    _write(proc / "uptime", "356521.37 700000.00\n")
    _write(proc / "sys" / "kernel" / "hostname", "db-primary-07\n")
    _write(proc / "sys" / "kernel" / "osrelease", "6.1.0-18-amd64\n")
    _write(
        proc / "self" / "mountinfo",
        "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n"
        "23 22 8:1 / /boot rw,relatime shared:2 - ext2 /dev/sda1 rw\n"
        "24 22 253:0 / /data rw,relatime shared:3 - xfs /dev/mapper/vg0-data rw\n",
    )
    _write(proc / "swaps", "Filename\tType\tSize\tUsed\tPriority\n")
    (sys / "class" / "block").mkdir(parents=True)
    for name, (major, minor, size, rot, nr, sched, model) in DISKS.items():
        d = sys / "block" / name
        _write(d / "dev", f"{major}:{minor}\n")
        _write(d / "size", f"{size}\n")
        _write(d / "ro", "0\n")
        for attr, value in (
            ("rotational", rot),
            ("nr_requests", nr),
            ("scheduler", sched),
            ("read_ahead_kb", 128),
            ("max_sectors_kb", 1280),
            ("max_hw_sectors_kb", 32767),
            ("logical_block_size", 512),
            ("physical_block_size", 4096 if rot else 512),
        ):
            _write(d / "queue" / attr, f"{value}\n")
        if model:
            _write(d / "device" / "model", model + "\n")
            _write(d / "device" / "vendor", ("ATA" if name.startswith("sd") else "NVMe") + "\n")
            _write(d / "device" / "serial", f"SN-{name.upper()}-0001\n")
        (d / "holders").mkdir(exist_ok=True)
        (d / "slaves").mkdir(exist_ok=True)
        os.symlink(f"../../block/{name}", sys / "class" / "block" / name)
    _write(sys / "block" / "dm-0" / "dm" / "name", "vg0-data\n")
    _write(sys / "block" / "loop0" / "loop" / "backing_file", "/var/lib/images/test.img\n")
    os.symlink("../../sda/sda2", sys / "block" / "dm-0" / "slaves" / "sda2")
    for part, (parent, major, minor, size) in PARTS.items():
        d = sys / "block" / parent / part
        _write(d / "dev", f"{major}:{minor}\n")
        _write(d / "size", f"{size}\n")
        _write(d / "partition", f"{minor}\n")
        (d / "holders").mkdir(exist_ok=True)
        os.symlink(f"../../block/{parent}/{part}", sys / "class" / "block" / part)
    os.symlink("../../../dm-0", sys / "block" / "sda" / "sda2" / "holders" / "dm-0")
    return base


if __name__ == "__main__":
    print(build())
