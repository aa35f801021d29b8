"""With real processes: a child writes 32 MiB to disk, idles, exits and is reaped; its
parent's DISK WRITE never shows those 32 MiB again as a spike."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.rates import rates_between
from iotop_plus.sampling.processes.reader import ProcessReader

pytestmark = pytest.mark.slow  # real processes doing I/O for seconds

PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
child.wait()          # reaped: the kernel adds its lifetime I/O to ours
time.sleep(1.5)       # stay alive to be sampled
"""

CHILD = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"x" * (32 << 20))
os.fsync(fd)          # to storage: write_bytes counts it
os.close(fd)
time.sleep(1.0)       # idle, so the samples see its whole I/O before it exits
"""


def test_a_real_parent_does_not_spike_when_its_child_is_reaped(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, str(tmp_path / "child.dat")])
    try:
        with ProcessReader(Roots()) as reader:
            prev = reader.sample()
            worst = 0.0
            while parent.poll() is None:
                time.sleep(0.2)
                cur = reader.sample()
                for key, rates in rates_between(prev, cur).items():
                    if key[0] == parent.pid and rates is not None and rates.write_bps:
                        worst = max(worst, rates.write_bps)
                prev = cur
    finally:
        parent.kill()
        parent.wait()
    # The child's 32 MiB happened while it was alive and was shown as its own; at 0.2 s a
    # spike would read 160 MiB/s.
    assert worst < 4 << 20, f"the parent showed {worst / 2**20:.0f} MiB/s when it reaped"
