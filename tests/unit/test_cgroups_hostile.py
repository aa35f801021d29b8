"""Hostile cgroup trees: bad lines, odd files, a cgroup removed mid-read: never a traceback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups import reader as cgroups_module
from iotop_plus.sampling.cgroups.files import parse_io_stat, parse_limits, parse_v1_blkio
from iotop_plus.sampling.cgroups.reader import MAX_FILE_BYTES, CgroupReader
from tests.support.cgroup_trees import systemd_tree

NGINX = "/system.slice/nginx.service"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    systemd_tree(tmp_path)
    return tmp_path


def _reader(base: Path) -> CgroupReader:
    return CgroupReader(Roots(base / "proc", base / "sys"))


def _cg(base: Path, path: str) -> Path:
    return base / "sys/fs/cgroup" / path.strip("/")


def test_malformed_io_stat_lines_are_named_and_the_good_ones_kept() -> None:
    text = (
        "8:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n"
        "sda rbytes=1\n"
        "8:16 rbytes=ten\n"
        "8:32 rbytes=-5\n"
        "8:48 justaword\n"
        "8:64 rbytes=4 cost.vrate=99.5 depth=64 avg_lat=12 win=100 future.key=x\n"
        "\n"
    )
    counters, bad = parse_io_stat(text)
    assert set(counters) == {"8:0", "8:64"} and counters["8:64"].rbytes == 4
    assert bad == [
        "not a MAJ:MIN line: 'sda rbytes=1'",
        "malformed line: '8:16 rbytes=ten'",
        "malformed line: '8:32 rbytes=-5'",
        "malformed line: '8:48 justaword'",
    ]


def test_malformed_v1_and_limit_files() -> None:
    counters, bad = parse_v1_blkio("8:0 Read 10\n8:0 Write x\nnonsense\nTotal 10\n", "")
    assert counters["8:0"].rbytes == 10 and len(bad) == 2
    with pytest.raises(ValueError, match=r"io\.max: '8:0 rbps=lots'"):
        parse_limits("8:0 rbps=lots\n", None, None)
    with pytest.raises(ValueError, match=r"io\.weight"):
        parse_limits(None, "default heavy\n", None)
    with pytest.raises(ValueError, match=r"io\.latency"):
        parse_limits(None, None, "8:0 goal=5\n")
    assert parse_limits("8:0 rbps=max wbps=max riops=max wiops=max\n", "", "").any is False


def test_a_bad_file_is_one_problem_line_and_the_rest_is_read(tree: Path) -> None:
    (_cg(tree, NGINX) / "io.stat").write_text("8:0 rbytes=1\ngarbage here\n")
    (_cg(tree, "/system.slice/postgresql.service") / "io.max").write_text("8:0 rbps=x\n")
    (_cg(tree, "/user.slice") / "io.pressure").write_text("nothing to see\n")
    sample = _reader(tree).sample()
    devices = sample.cgroups[NGINX].devices
    assert devices is not None
    assert devices["8:0"].rbytes == 1
    assert f"{NGINX}: not a MAJ:MIN line: 'garbage here'" in sample.problems
    assert "/system.slice/postgresql.service: io.max: '8:0 rbps=x'" in sample.problems
    assert any(p.startswith("/user.slice/io.pressure: no pressure line") for p in sample.problems)
    assert sample.cgroups["/system.slice/postgresql.service"].limits is None
    assert len(sample.cgroups) == 15


def test_fifos_directories_symlinks_and_endless_files_do_not_hang_or_crash(tree: Path) -> None:
    stat = _cg(tree, NGINX) / "io.stat"
    stat.unlink()
    os.mkfifo(stat)  # no writer: a blocking open would wait forever
    pg = _cg(tree, "/system.slice/postgresql.service") / "io.stat"
    pg.unlink()
    pg.mkdir()
    user = _cg(tree, "/user.slice") / "io.stat"
    user.unlink()
    user.symlink_to("/proc/self/io")
    big = _cg(tree, "/system.slice") / "io.stat"
    big.write_text("8:0 rbytes=1\n" * (MAX_FILE_BYTES // 10))
    sample = _reader(tree).sample()
    assert sample.cgroups[NGINX].devices == {}  # a FIFO with no writer reads as empty
    problems = "\n".join(sample.problems)
    assert "cannot read /system.slice/postgresql.service: Is a directory" in problems
    assert "cannot read /user.slice: Too many levels of symbolic links" in problems
    assert "cannot read /system.slice: larger than 1,048,576 bytes" in problems
    assert sample.cgroups["/system.slice"].devices is None


def test_a_symlinked_cgroup_directory_is_not_followed(tree: Path) -> None:
    (_cg(tree, "/system.slice") / "loop.service").symlink_to(_cg(tree, "/"))
    sample = _reader(tree).sample()
    assert "/system.slice/loop.service" not in sample.cgroups


def test_a_cgroup_removed_mid_read_is_left_out(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_scandir = os.scandir
    victim = _cg(tree, NGINX)

    def scandir_then_remove(path: str) -> object:
        entries = list(real_scandir(path))
        if str(path).endswith("system.slice") and victim.exists():
            monkeypatch.undo()  # rmtree lists with scandir too
            shutil.rmtree(victim)  # listed, then removed before its files are read

        class Listing:
            def __enter__(self) -> list[os.DirEntry[str]]:
                return entries

            def __exit__(self, *exc: object) -> None:
                return None

        return Listing()

    monkeypatch.setattr(cgroups_module.os, "scandir", scandir_then_remove)
    sample = _reader(tree).sample()
    assert NGINX not in sample.cgroups
    assert "/system.slice/postgresql.service" in sample.cgroups
    assert sample.problems == ()


def test_an_unreadable_cgroup_is_a_problem_line_for_an_unprivileged_reader(tree: Path) -> None:
    (_cg(tree, NGINX) / "io.stat").chmod(0)
    sample = _reader(tree).sample()
    if os.geteuid() == 0:  # root reads it anyway: nothing to report
        assert sample.cgroups[NGINX].devices is not None
    else:  # pragma: no cover - the suite runs as root; the nobody e2e test covers this
        assert any("Permission denied" in p for p in sample.problems)
