"""Cgroup files stay open between ticks and are read again at offset 0 (#25, cgroups per tick).

At 1,000 busy cgroups a tick opened, read and closed 2,000 files; opening and closing were
most of its system calls. The reader now keeps v2's io.stat and io.pressure open per cgroup
(and its directory's inode), reads them with one pread each, and lets go of a cgroup's files
when it is gone or made again under the same path.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import CgroupReader
from iotop_plus.sampling.open_files import OpenFiles
from tests.support.cgroup_trees import bump_io_stat, io_line, synthetic_tree

COUNT = 40


def _open_under(base: Path) -> list[str]:
    """Paths under ``base`` that this process has open."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(base)):
            out.append(target)
    return out


def test_each_cgroups_files_are_opened_once_and_read_fresh_every_tick(mem_path: Path) -> None:
    paths = synthetic_tree(mem_path, COUNT)
    reader = CgroupReader(Roots(mem_path / "proc", mem_path / "sys"))
    first = reader.sample()
    kept = _open_under(mem_path)
    # io.stat and io.pressure of each cgroup below the root stay open after the tick.
    assert sum(p.endswith("/io.stat") for p in kept) >= COUNT
    assert sum(p.endswith("/io.pressure") for p in kept) >= COUNT
    bump_io_stat(mem_path, paths, 5)  # the same files rewritten in place: new counters
    second = reader.sample()
    assert sorted(_open_under(mem_path)) == sorted(kept)  # nothing opened anew
    for i, path in enumerate(paths):
        before, after = first.cgroups[path].devices, second.cgroups[path].devices
        assert before is not None and after is not None
        # Read at offset 0: the new text (bump_io_stat's figures), not the first one.
        assert after["8:0"].rbytes == (i + 1) * 4096 * 6 != before["8:0"].rbytes


def test_a_cgroup_removed_and_made_again_is_read_anew_and_its_old_files_closed(
    mem_path: Path,
) -> None:
    paths = synthetic_tree(mem_path, COUNT)
    reader = CgroupReader(Roots(mem_path / "proc", mem_path / "sys"))
    reader.sample()
    gone, remade = paths[3], paths[7]
    root = mem_path / "sys" / "fs" / "cgroup"
    shutil.rmtree(root / gone.strip("/"))
    where = root / remade.strip("/")
    shutil.rmtree(where)
    where.mkdir()  # a new directory (inode) under the same path, with its own counters
    (where / "io.stat").write_text(io_line("8:0", 4096, 0))
    (where / "io.pressure").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
    sample = reader.sample()
    assert gone not in sample.cgroups
    devices = sample.cgroups[remade].devices
    assert devices is not None and devices["8:0"].rbytes == 4096
    assert not [p for p in _open_under(mem_path) if "(deleted)" in p or gone in p]


def test_past_the_limit_files_are_opened_and_closed_as_before(tmp_path: Path) -> None:
    files = []
    for i in range(5):
        f = tmp_path / f"f{i}"
        f.write_text(f"text {i}\n")
        files.append(f)
    kept = OpenFiles(lambda p: Path(p).read_text(), limit=2)
    assert [kept.read(str(f), 1) for f in files] == [f"text {i}\n" for i in range(5)]
    assert len(kept) == 2
    kept.sweep()  # all read since the last sweep: all stay
    assert len(kept) == 2
    kept.sweep()  # none read since: closed
    assert len(kept) == 0 and _open_under(tmp_path) == []
    with pytest.raises(FileNotFoundError):
        kept.read(str(tmp_path / "missing"), 1)


def _v2_mount() -> Path | None:
    with open("/proc/self/mounts", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1])
    return None


@pytest.mark.root
def test_a_real_cgroup_file_kept_open_reads_fresh_and_fails_once_the_cgroup_is_gone() -> None:
    mount = _v2_mount()
    if mount is None or os.geteuid() != 0:
        pytest.fail("needs root and a cgroup2 mount (seen on this machine)")
    where = mount / f"iotop-plus-test-fds-{os.getpid()}"
    where.mkdir()
    try:
        kept = OpenFiles(lambda p: Path(p).read_text())
        ino = where.stat().st_ino
        stat_file = str(where / "cgroup.stat")
        assert "nr_descendants 0" in kept.read(stat_file, ino)
        (where / "child").mkdir()
        assert "nr_descendants 1" in kept.read(stat_file, ino)  # the kernel's text now
        assert len(kept) == 1
        (where / "child").rmdir()
    finally:
        if (where / "child").exists():
            (where / "child").rmdir()
        where.rmdir()
    with pytest.raises(FileNotFoundError):  # the kept file fails (ENODEV), the path is gone
        kept.read(stat_file, ino)
    assert len(kept) == 0
