"""The one clock through the real console script in tmux: ``-i`` wins over the config file,
``space`` freezes the Processes tab with the table, and ``+`` changes the pace of both."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_tui_tmux import STATE_DIR, console_script, wait_for_table
from tests.support.tmux import TmuxSession, tmux_available


@pytest.fixture
def tmux() -> Iterator[TmuxSession]:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    with TmuxSession(160, 40) as session:
        yield session


def config_home(tmp_path: Path, interval: float) -> dict[str, str]:
    (tmp_path / "iotop-plus").mkdir()
    (tmp_path / "iotop-plus" / "config.toml").write_text(f"interval = {interval}\n")
    return {"XDG_CONFIG_HOME": str(tmp_path)}


pytestmark = pytest.mark.slow  # the TUI in tmux

WRITER = """
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
while True:  # a different amount every 50 ms, so its WRITE figure differs every frame
    os.pwrite(fd, b"x" * random.randrange(4096, 400000, 4096), 0)
    os.fsync(fd)
    time.sleep(0.05)
"""


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "writer.dat")])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=10)


def panel_text(screen: str) -> str:
    """The right-hand side panel (the Processes tab), from every line of the screen.

    The panel's left border is found on its tab line: from 150 columns the panel takes a
    share of the width, so it does not start at a fixed column."""
    lines = screen.split("\n")
    border = next((line.rfind("│") for line in lines if "Processes" in line and "│" in line), 118)
    return "\n".join(line[border + 1 :] for line in lines[1:-1])


def processes_shown(screen: str) -> bool:
    return "PID" in panel_text(screen) and "COMMAND" in panel_text(screen)


def changes_in(tmux: TmuxSession, seconds: float) -> int:
    """How often the Processes tab's text changed within ``seconds``."""
    changes, last = 0, panel_text(tmux.capture())
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = panel_text(tmux.capture())
        if text != last:
            changes, last = changes + 1, text
        time.sleep(0.03)
    return changes


def test_dash_i_wins_over_the_config_file(tmux: TmuxSession, tmp_path: Path) -> None:
    env = config_home(tmp_path, 2)
    launched = tmux.launch([console_script(), "--state-dir", STATE_DIR, "-i", "1"], env=env)
    wait_for_table(tmux)
    tmux.wait_for("every 1s")
    tmux.send_keys("q")
    assert tmux.wait_exit(launched) == 0
    launched = tmux.launch([console_script(), "--state-dir", STATE_DIR], env=env)
    wait_for_table(tmux)
    tmux.wait_for("every 2s")  # without -i, the config file decides
    tmux.send_keys("q")
    assert tmux.wait_exit(launched) == 0
    tmux.assert_restored(launched)


def test_space_freezes_the_processes_tab_and_plus_speeds_it_up(
    tmux: TmuxSession, tmp_path: Path, writer: int
) -> None:
    launched = tmux.launch(
        [console_script(), "--state-dir", STATE_DIR, "-i", "0.5"], env=config_home(tmp_path, 1)
    )
    wait_for_table(tmux)
    tmux.send_keys("p")
    tmux.wait_until(processes_shown, 10, what="the Processes tab")
    tmux.wait_until(lambda s: str(writer) in panel_text(s), 10, what="the writer's row")
    tmux.send_keys("Space")
    tmux.wait_for("PAUSED at")
    # The frame taken just before the pause may still be on its way to the screen (its rows
    # are arranged in a worker); what is shown after that must not move.
    time.sleep(0.5)
    assert changes_in(tmux, 2.0) == 0, "the Processes tab moved while paused"
    tmux.send_keys("Space")
    tmux.wait_for("LIVE")
    at_half_second = changes_in(tmux, 3.0)
    tmux.send_keys("+")
    tmux.wait_for("every 0.25s")
    at_quarter_second = changes_in(tmux, 3.0)
    # 6 frames in 3 s at 0.5 s, 12 at 0.25 s; the writer's figure changes in nearly every one.
    assert at_quarter_second > at_half_second >= 3, (at_half_second, at_quarter_second)
    tmux.send_keys("q")
    assert tmux.wait_exit(launched) == 0
    tmux.assert_restored(launched)
