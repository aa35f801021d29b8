"""procfs and cgroupfs serve a read a page at a time: a ``/proc/diskstats`` of 261 devices
came in a first read of 4,066 of its 15,639 bytes. The cgroup reader reads such a file to its
end, kept open or not: the devices past the first page are named, and counted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import _read, read_device_numbers
from iotop_plus.sampling.open_files import OpenFiles

PAGE = 4096


@pytest.fixture
def paged(monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.read``/``os.pread`` give at most a page of whole lines, as seq_file does."""
    real_read, real_pread = os.read, os.pread

    def whole_lines(data: bytes) -> bytes:
        return data if len(data) < PAGE else data[: data.rindex(b"\n") + 1]

    def read(fd: int, n: int) -> bytes:
        raw = real_read(fd, min(n, PAGE))
        data = whole_lines(raw)
        os.lseek(fd, len(data) - len(raw), os.SEEK_CUR)  # the next read starts at a line
        return data

    def pread(fd: int, n: int, offset: int) -> bytes:
        return whole_lines(real_pread(fd, min(n, PAGE), offset))

    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(os, "pread", pread)


def _diskstats(tmp_path: Path, devices: int) -> Roots:
    proc = tmp_path / "proc"
    proc.mkdir()
    lines = [f"   7 {n:7d} loop{n} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" for n in range(devices)]
    (proc / "diskstats").write_text("".join(lines))
    return Roots(proc=proc, sys=tmp_path / "sys")


def test_every_device_past_the_first_page_is_named(tmp_path: Path, paged: None) -> None:
    roots = _diskstats(tmp_path, 300)
    assert (roots.proc / "diskstats").stat().st_size > 3 * PAGE
    names = read_device_numbers(roots)
    assert len(names) == 300 and names["7:299"] == "loop299"


def test_a_long_file_kept_open_is_read_whole_each_time(tmp_path: Path, paged: None) -> None:
    path = tmp_path / "io.stat"
    text = "".join(f"7:{n} rbytes={n} wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n" for n in range(200))
    path.write_text(text)
    assert len(text) > 2 * PAGE
    kept = OpenFiles(_read)
    ino = os.stat(tmp_path).st_ino
    assert kept.read(str(path), ino) == text
    assert kept.read(str(path), ino) == text  # and again, however it was kept


def test_a_short_file_is_kept_open_and_read_with_one_pread(tmp_path: Path, paged: None) -> None:
    path = tmp_path / "io.pressure"
    path.write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    kept = OpenFiles(_read)
    ino = os.stat(tmp_path).st_ino
    assert kept.read(str(path), ino).startswith("some ")
    assert len(kept) == 1
