"""The real console script in a terminal: a probe with live progress and its card, Ctrl-C,
and a terminal that disappears mid-probe (an SSH drop: SIGHUP)."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.tmux import TmuxSession, tmux_available

pytestmark = [pytest.mark.slow]


@pytest.fixture(autouse=True)
def _need_tmux() -> None:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)


def _console_script() -> str:
    beside = Path(sys.executable).parent / "iotop-plus"
    return str(beside) if beside.exists() else "iotop-plus"


def _fio_on(path: Path) -> list[psutil.Process]:
    return [
        p
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [""])[0].endswith("fio")
        and any(str(path) in a for a in p.info["cmdline"])
    ]


def test_probe_in_a_terminal_shows_progress_then_the_card(tmp_path: Path, fio_bin: str) -> None:
    with TmuxSession(120, 40) as session:
        launched = session.launch(
            [
                _console_script(),
                "--state-dir",
                f"{tmp_path}-state",
                "probe",
                "seqscan",
                "-t",
                str(tmp_path),
                "-r",
                "2",
                "-s",
                "size=32",
            ]
        )
        session.wait_for("s left", timeout=30)
        screen = session.wait_for("reference:", timeout=30)
        assert "Sequential scan (seqscan)" in screen and "quick probe" in screen
        assert session.wait_exit(launched) == 0
        session.assert_restored(launched)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_the_terminal_cancels_cleanly(tmp_path: Path, fio_bin: str) -> None:
    with TmuxSession(120, 40) as session:
        launched = session.launch(
            [_console_script(), "probe", "index", "-t", str(tmp_path), "-r", "60", "-s", "size=32"]
        )
        session.wait_for("s left", timeout=30)
        session.send_keys("C-c")
        assert session.wait_exit(launched, timeout=30) == 130
        assert "cancelled by SIGINT" in session.capture()
        session.assert_restored(launched)
    assert list(tmp_path.iterdir()) == []
    assert _fio_on(tmp_path) == []


def test_closing_the_terminal_mid_probe_leaves_no_file_and_no_fio(
    tmp_path: Path, fio_bin: str
) -> None:
    session = TmuxSession(120, 40)
    try:
        launched = session.launch(
            [_console_script(), "probe", "mixed", "-t", str(tmp_path), "-r", "60", "-s", "size=32"]
        )
        session.wait_for("s left", timeout=30)
        pid = session.program_pid(launched)
        assert any(p.name.startswith(".iotop-plus-") for p in tmp_path.iterdir())
    finally:
        session.kill()  # the terminal goes away: the probe gets SIGHUP
    with contextlib.suppress(psutil.NoSuchProcess):  # already gone
        psutil.wait_procs([psutil.Process(pid)], timeout=30)
    for _ in range(100):  # fio's own exit follows its parent's by a moment
        if not _fio_on(tmp_path):
            break
        time.sleep(0.1)
    assert list(tmp_path.iterdir()) == []
    assert _fio_on(tmp_path) == []
