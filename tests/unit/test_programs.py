"""The one lookup for external programs: as root only trusted system directories, PATH never."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iotop_plus import programs
from iotop_plus.programs import SYSTEM_PATH, lookup_program, search_path_override


def _program(directory: Path, name: str = "fio", mode: int = 0o755) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def test_as_root_path_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _program(tmp_path / "evil")
    monkeypatch.setattr(programs, "_is_root", lambda: True)
    monkeypatch.setenv("PATH", str(tmp_path / "evil"))
    assert programs.search_path() == SYSTEM_PATH
    found = lookup_program("fio")
    assert found.trusted_only and found.path != str(tmp_path / "evil" / "fio")


def test_a_plain_user_gets_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    mine = _program(tmp_path / "bin")
    monkeypatch.setattr(programs, "_is_root", lambda: False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'bin'}")
    assert lookup_program("fio").path == str(mine)


@pytest.mark.root
def test_as_root_untrusted_directories_and_binaries_are_skipped(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    open_dir = tmp_path / "world-writable"
    _program(open_dir)
    open_dir.chmod(0o777)
    theirs = _program(tmp_path / "theirs")
    os.chown(theirs, 65534, 65534)
    group_writable = _program(tmp_path / "gw", mode=0o775)
    good = _program(tmp_path / "good")
    dirs = [str(open_dir), str(theirs.parent), str(group_writable.parent), str(good.parent)]
    with search_path_override(dirs):
        found = lookup_program("fio")
    assert found.path == str(good)
    assert [s.split(":")[0] for s in found.skipped] == [
        str(open_dir / "fio"),
        str(theirs),
        str(group_writable),
    ]
    assert "writable by group or others" in found.skipped[0]
    assert "owned by uid 65534" in found.skipped[1]


@pytest.mark.root
def test_a_missing_program_says_where_it_looked_and_what_it_skipped(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    theirs = _program(tmp_path / "theirs")
    os.chown(theirs, 65534, 65534)
    with search_path_override([str(theirs.parent)]):
        found = lookup_program("fio")
    assert found.path is None
    assert found.missing("apt-get install fio") == (
        f"fio is not installed (looked in {theirs.parent}; as root PATH is not used); "
        f"skipped {theirs}: owned by uid 65534, not root: apt-get install fio"
    )
