"""The one loop-device attach of the suite asks again when the free number it was given
vanished (another process removed its node: ENOENT) or was taken (EBUSY) before the bind."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import loopdev


class FakeLosetup:
    """``losetup --find --show`` that fails with ``said`` the first ``fails`` times."""

    def __init__(self, said: str, fails: int) -> None:
        self.said = said
        self.fails = fails
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        if len(self.calls) <= self.fails:
            return subprocess.CompletedProcess(argv, 1, "", f"losetup: {argv[-1]}: {self.said}\n")
        return subprocess.CompletedProcess(argv, 0, "/dev/loop7\n", "")


@pytest.fixture
def backing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "backing.img"
    path.write_bytes(b"")
    monkeypatch.setattr(loopdev, "bound_to", lambda _: [])  # nothing half attached
    return path


@pytest.mark.parametrize(
    "said",
    [
        "failed to set up loop device: No such file or directory",
        "failed to set up loop device: Device or resource busy",
    ],
)
def test_a_number_that_vanished_or_was_taken_is_asked_for_again(
    backing: Path, monkeypatch: pytest.MonkeyPatch, said: str
) -> None:
    losetup = FakeLosetup(said, fails=loopdev.ATTACH_TRIES - 1)
    monkeypatch.setattr(subprocess, "run", losetup)
    assert loopdev.attach(backing, direct_io=True) == "loop7"
    assert len(losetup.calls) == loopdev.ATTACH_TRIES
    assert all(
        argv[:4] == ["losetup", "--find", "--show", "--direct-io=on"] for argv in losetup.calls
    )


def test_it_gives_up_after_twenty_tries_with_losetups_words(
    backing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    losetup = FakeLosetup("failed to set up loop device: No such file or directory", fails=99)
    monkeypatch.setattr(subprocess, "run", losetup)
    with pytest.raises(RuntimeError, match=r"in 20 tries: .*No such file or directory"):
        loopdev.attach(backing)
    assert len(losetup.calls) == 20


def test_any_other_failure_is_said_at_once(backing: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    losetup = FakeLosetup("failed to set up loop device: Permission denied", fails=99)
    monkeypatch.setattr(subprocess, "run", losetup)
    with pytest.raises(RuntimeError, match="Permission denied"):
        loopdev.attach(backing)
    assert len(losetup.calls) == 1
