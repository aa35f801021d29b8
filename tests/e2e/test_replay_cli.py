"""``iotop-plus replay``: the real recorder writes, the real TUI replays it in tmux."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_tui_tmux import console_script
from tests.support.cli import run_cli
from tests.support.tmux import TmuxError, TmuxSession, tmux_available

pytestmark = pytest.mark.slow  # the console script, and the TUI in tmux

REPO = Path(__file__).resolve().parents[2]


def iotop_plus(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, state=state, cwd=REPO)


def test_replay_opens_a_real_recording_and_refuses_tuning(tmp_path: Path) -> None:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    state = tmp_path / "state"
    done = iotop_plus(state, "record", "--interval", "0.25", "--count", "8")
    assert done.returncode == 0, done.stderr
    with TmuxSession(120, 36) as tmux:
        launched = tmux.launch([console_script(), "--state-dir", str(state), "replay"])
        screen = tmux.wait_for("REPLAY at ", timeout=20)
        assert "every 0.25s" in screen  # the recorded interval, not a measured 0.2487...
        vda = next((line for line in screen.splitlines() if line.startswith("vda ")), None)
        assert vda is not None and vda.split()[1] != "-", screen  # figures, not dashes
        tmux.send_keys("R")  # read-ahead: refused in a replay, with the reason
        tmux.wait_for("tuning and probes are off", timeout=10)
        tmux.send_keys("q")
        assert tmux.wait_exit(launched, timeout=15) == 0


def test_replay_errors_are_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    done = iotop_plus(tmp_path / "state", "replay", str(empty))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    missing = iotop_plus(tmp_path / "state", "replay", str(tmp_path / "nope.rec"))
    assert missing.returncode == 1 and "nope.rec" in missing.stderr, missing.stderr
    state = tmp_path / "state2"
    assert iotop_plus(state, "record", "--interval", "0.25", "--count", "3").returncode == 0
    bad = iotop_plus(state, "replay", "--at", "tea time")
    assert bad.returncode == 2 and bad.stderr.startswith("iotop-plus: error: --at: "), bad.stderr


def test_the_live_tuis_history_reaches_back_into_this_hosts_recordings(tmp_path: Path) -> None:
    """The rulings: "When a recorder writes to this host's recording directory, the TUI's
    history reaches back into those files: started at 03:10, it can scrub to 02:55"."""
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    state = tmp_path / "state"
    done = iotop_plus(state, "record", "--interval", "0.25", "--count", "8")
    assert done.returncode == 0, done.stderr
    time.sleep(2.0)  # the TUI starts well after the recording ended
    started = time.time()
    with TmuxSession(120, 36) as tmux:
        launched = tmux.launch([console_script(), "--state-dir", str(state)])
        tmux.wait_for("LIVE", timeout=20)
        tmux.wait_for(re.compile(r"^vda +\d", re.M), timeout=20)  # figures: the app is up
        local = time.localtime(started)

        def shown_at(screen: str) -> float | None:
            shown = re.search(r"HISTORY at (\d\d:\d\d:\d\d)", screen)
            if shown is None:
                return None
            h, m, s = (int(x) for x in shown.group(1).split(":"))
            return time.mktime((*local[:3], h, m, s, 0, 0, local.tm_isdst))

        # The recordings open on a thread of their own at the first scrub past the ring:
        # until then a scrub stays in the ring. A key sent while the app still loads can be
        # lost under load too: press again until a recorded frame shows.
        def recorded(screen: str) -> bool:
            at = shown_at(screen) if "HISTORY at " in screen else None
            return at is not None and at < started - 1.0

        screen, at = "", None
        for _ in range(20):
            tmux.send_keys("{")  # a minute back: before the TUI's own first frame
            try:
                screen = tmux.wait_until(recorded, timeout=5, what="a recorded frame")
            except TmuxError:
                screen = tmux.capture()
                continue
            at = shown_at(screen)
            break
        assert at is not None and at < started - 1.0, screen  # a recorded frame, not the ring's
        tmux.send_keys("q")
        assert tmux.wait_exit(launched, timeout=15) == 0
