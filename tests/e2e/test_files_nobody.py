"""Files without root, for real: as uid 65534 the part has no tracer and estimates from the
user's own processes' file positions, and says so."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.nobody import nobody_env, nobody_python

CHILD = r"""
import json, os, sys, tempfile
from iotop_plus.roots import Roots
from iotop_plus.sampling.files.part import FilesPart
from iotop_plus.sampling.topology.inventory import read_inventory
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.disks.sampler import Sampler

part = FilesPart()
assert part.trace(Roots()) is None  # no tracer without root
roots = Roots()
sampler = Sampler(roots)
reader = part.reader(roots)
path = os.path.join(sys.argv[1], "mine.dat")
with open(path, "wb") as fh:
    fh.write(b"x" * (1 << 20))
fh = open(path, "rb")

def frame(previous):
    sample = sampler.sample()
    ctx = ReadContext(roots, sample, previous, read_inventory(roots, use_udev=False),
                      frozenset({"files"}))
    return sample, reader.read(ctx)[0]

first, _ = frame(None)
fh.read(256 * 1024)
_, value = frame(first)
st = os.fstat(fh.fileno())
dev = [f for d in value.devices.values() for f in d.files if f.inode == st.st_ino]
print(json.dumps({"estimated": value.estimated, "note": value.note,
                  "files": [[f.path, f.read_bytes] for f in dev], "path": path}))
"""


def test_nobody_gets_an_estimate_of_their_own_files_that_says_so() -> None:
    python = nobody_python()
    if os.major(os.stat("/var/tmp").st_dev) == 0:
        pytest.skip("/var/tmp is on no block device here (tmpfs): no device to list it under")
    with tempfile.TemporaryDirectory(prefix="iotop-plus-files-nobody-", dir="/var/tmp") as tmp:
        Path(tmp).chmod(0o777)
        done = subprocess.run(
            [*python, "-c", CHILD, tmp],
            capture_output=True,
            text=True,
            env=nobody_env("/usr/bin:/bin"),
            cwd="/",
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["estimated"] is True and "estimated" in got["note"]
    assert got["files"] == [[got["path"], 256 * 1024]]
