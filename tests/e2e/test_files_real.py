"""Hot files per device, for real: the part's probes in real bpftrace on a loop device with
ext4 or XFS, its reader given a frame's counts (root only).

One frame covers a buffered ``dd`` of one file (written back by ``sync``), a direct fio reader
of a second, and a ``cat`` of a third whose cached pages were dropped (``posix_fadvise
DONTNEED`` on that file alone, so nothing host-wide changes).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.files.model import FilesFrame
from iotop_plus.sampling.files.part import FilesPart
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.topology.inventory import read_inventory
from tests.support.loopdev import loop_device
from tests.support.mounts import unmount
from tests.support.part_tracer import PartTracer, part_tracer

MB = 1024 * 1024
READ_AND_HOLD = """import sys
f = open(sys.argv[1], "rb")
while f.read(1 << 20):
    pass
print("read", flush=True)
sys.stdin.read()
"""
"""A reader that reads its file to the end, says so, and keeps it open until its stdin ends."""
SIZE = 32 * MB

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bpftrace") is None or shutil.which("fio") is None,
    reason="needs root, bpftrace and fio",
)


MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
}
"""How each filesystem is made (ext4's tables written at mkfs, so no lazy init writes later)."""
SIZE_MB = {"ext4": 256, "xfs": 512}
"""Loop device sizes (mkfs.xfs refuses a filesystem under 300 MB)."""


@contextlib.contextmanager
def ext4(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loop device with ext4."""
    with filesystem(tmp_path, "ext4") as made:
        yield made


@contextlib.contextmanager
def filesystem(tmp_path: Path, fs: str) -> Iterator[tuple[str, Path]]:
    """A loop device with ``fs`` mounted on ``tmp_path/mnt``; unmounted and detached on exit."""
    if shutil.which(MKFS[fs][0]) is None:
        pytest.skip(f"{MKFS[fs][0]} is not installed (make sysdeps)")
    with loop_device(tmp_path, SIZE_MB[fs]) as dev:
        subprocess.run([*MKFS[fs], f"/dev/{dev}"], check=True, capture_output=True)
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True)
        try:
            yield dev, mnt
        finally:
            unmount(mnt)


def write_file(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.write(os.urandom(MB) * (size // MB))
        fh.flush()
        os.fsync(fh.fileno())


def drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class Frame:
    """Reads one frame of the part: the counts since ``start`` and the disk counters."""

    def __init__(self, tracer: PartTracer) -> None:
        self.roots = Roots()
        self.tracer = tracer
        self.sampler = Sampler(self.roots)
        self.reader = FilesPart().reader(self.roots)
        self.previous = self.sampler.sample()
        tracer.mark()
        tracer.take()

    def read(self) -> FilesFrame:
        self.tracer.mark()
        (traced,) = self.tracer.take()
        sample = self.sampler.sample()
        ctx = ReadContext(
            self.roots,
            sample,
            self.previous,
            read_inventory(self.roots, use_udev=False),
            frozenset({"files"}),
            traced=traced,
        )
        value, _events = self.reader.read(ctx)
        self.previous = sample
        assert value is not None
        return value


def within(got: int, want: int, pct: float = 10.0) -> bool:
    return abs(got - want) <= want * pct / 100


@pytest.mark.parametrize("fs", ["ext4", "xfs"])
def test_each_tool_in_its_files_bytes_close_and_sums_match_diskstats(
    tmp_path: Path, fs: str
) -> None:
    """On ext4 and on XFS (whose writes, write-back and extending folio adds have probes of
    their own): each tool's bytes in its own file, the files' sums 90-105 % of diskstats."""
    with filesystem(tmp_path, fs) as (dev, mnt):
        program = FilesPart().trace(Roots())  # after mkfs: XFS's tracepoints exist now
        assert program is not None
        assert fs != "xfs" or "xfs:xfs_file_buffered_write" in program.text
        with part_tracer(program) as tracer:
            check_each_tool(dev, mnt, tracer)


def check_each_tool(dev: str, mnt: Path, tracer: PartTracer) -> None:
    """The first test's frame on ``dev`` (mounted on ``mnt``) and its checks."""
    written, direct, cached = mnt / "written.dat", mnt / "direct.dat", mnt / "cached.dat"
    write_file(direct, SIZE)
    write_file(cached, SIZE)
    drop_cache(cached)
    subprocess.run(["sync", "-f", str(mnt)], check=True)
    frame = Frame(tracer)
    dd = subprocess.run(
        ["dd", "if=/dev/zero", f"of={written}", "bs=1M", f"count={SIZE // MB}", "status=none"],
        check=True,
    )
    del dd
    subprocess.run(["sync", "-f", str(mnt)], check=True)
    fio = subprocess.run(
        [
            "fio",
            "--name=direct",
            f"--filename={direct}",
            "--rw=read",
            "--bs=64k",
            "--direct=1",
            "--ioengine=psync",
            f"--size={SIZE}",
            "--output-format=terse",
        ],
        check=True,
        capture_output=True,
    )
    del fio
    # The reader holds the file open across the frame's end: named by path, found among
    # the pids that did the file's I/O (not by a full scan, which runs only now and then).
    reader = subprocess.Popen(
        [sys.executable, "-c", READ_AND_HOLD, str(cached)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "read\n"
        value = frame.read()
        inodes = {p.name: p.stat().st_ino for p in (written, direct, cached)}
    finally:
        reader.communicate("", timeout=30)
    files = value.of(dev)
    assert files is not None, value
    by_ino = {f.inode: f for f in files.files}
    w, d, c = (by_ino.get(inodes[n]) for n in ("written.dat", "direct.dat", "cached.dat"))
    assert w is not None and d is not None and c is not None, files
    assert within(w.write_bytes, SIZE), w
    assert within(w.dirtied_bytes, SIZE), w
    assert w.read_bytes <= SIZE // 100, f"the writer read its own file: {w}"
    assert all(p.read_bytes == 0 for p in w.processes if p.comm == "dd"), w
    assert within(d.direct_read_bytes, SIZE) and d.direct_write_bytes == 0, d
    assert within(c.read_bytes, SIZE), c
    assert c.path == str(cached) and c.is_open, c
    for closed in (w, d):  # their tools exited before the frame ended
        assert closed.path == f"inode {closed.inode} on {mnt} (not open)", closed
        assert not closed.is_open
    assert all(f.partition == dev for f in files.files)
    assert files.other_read_bytes is not None and files.other_write_bytes is not None
    file_r = sum(f.read_bytes + f.direct_read_bytes for f in files.files)
    file_w = sum(f.write_bytes + f.direct_write_bytes for f in files.files)
    disk_r, disk_w = file_r + files.other_read_bytes, file_w + files.other_write_bytes
    assert 0.90 * disk_r <= file_r <= 1.05 * disk_r, (file_r, disk_r)
    assert 0.90 * disk_w <= file_w <= 1.05 * disk_w, (file_w, disk_w)


@pytest.mark.parametrize("fs", ["ext4", "xfs"])
@pytest.mark.parametrize("bs", [MB, 4096, 4000])
def test_writeback_names_the_buffered_writer_as_top_dirtier(
    tmp_path: Path, fs: str, bs: int
) -> None:
    """A buffered writer's storm names it as the top dirtier. Its 4k writes are single-page
    events, counted one in 8: its dirtied bytes still come out within 10 %, and none of the
    pages its writes add is counted as a read (a sampled-out write leaves no page that the
    page-add probe counts). 4000-byte writes cross pages: each counts once."""
    with filesystem(tmp_path, fs) as (dev, mnt):
        program = FilesPart().trace(Roots())
        assert program is not None
        with part_tracer(program) as tracer:
            frame = Frame(tracer)
            storm = mnt / "storm.dat"
            writer = subprocess.Popen(
                ["dd", "if=/dev/zero", f"of={storm}", f"bs={bs}", f"count={SIZE // bs}",
                 "status=none"],
            )  # fmt: skip
            pid = writer.pid
            assert writer.wait(60) == 0
            dirtied = frame.read()  # dirtied, not yet written back
            subprocess.run(["sync", "-f", str(mnt)], check=True)  # the flusher writes it back
            value = frame.read()
            ino = storm.stat().st_ino
        files = value.of(dev)
        assert files is not None and files.dirtiers, value
        top = files.dirtiers[0]
        assert top.pid == pid and top.comm == "dd", files.dirtiers
        assert top.share >= 0.9, files.dirtiers
        got = [f for v in (dirtied, value) if (d := v.of(dev)) for f in d.files if f.inode == ino]
        assert got, (dirtied, value)
        total = SIZE // bs * bs
        assert within(sum(f.dirtied_bytes for f in got), total), got
        assert within(sum(f.write_bytes for f in got), total), got
        assert sum(f.read_bytes for f in got) == 0, f"the writer read its own file: {got}"


def test_serve_files_exports_the_busiest_files_by_path(tmp_path: Path) -> None:
    """``serve --files 2`` exports the bytes written back of a file this test holds open, under
    its path; without ``--files`` no file series is exported (every path is a label)."""
    import urllib.request

    from tests.support.cli import serve
    from tests.support.wait import holds_within

    def scrape(port: int) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            return str(reply.read().decode())

    with ext4(tmp_path) as (dev, mnt):
        target = mnt / "exported.dat"
        with open(target, "wb") as held:  # held open: the exporter may name it by its path
            line = f'iotop_plus_file_written_bytes_total{{device="{dev}",path="{target}"}}'

            def written(port: int) -> bool:
                held.write(os.urandom(MB))
                held.flush()
                os.fsync(held.fileno())
                return any(
                    row.startswith(line) and float(row.split()[-1]) > 0
                    for row in scrape(port).splitlines()
                )

            with serve("--files", "2", state=tmp_path / "state", timeout=30) as port:
                assert holds_within(lambda: written(port), 60), scrape(port)
            with serve(state=tmp_path / "state2", timeout=30) as port:
                held.write(os.urandom(MB))
                os.fsync(held.fileno())
                assert "iotop_plus_file_" not in scrape(port)
