"""An engineer tunes a loop device from the real console script, then undoes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_tui_tmux import console_script, show_device, tmux  # noqa: F401 - fixture
from tests.support.queue_guard import queue_values, restored_queue
from tests.support.tmux import TmuxSession

pytestmark = [pytest.mark.root, pytest.mark.slow]


def type_read_ahead(session: TmuxSession, value: str) -> None:
    """R opens the read-ahead picker; Tab moves to its input; type and confirm."""
    session.send_keys("R")
    session.wait_for("or type a value")
    session.send_keys("Tab")
    session.wait_until(lambda s: "▊  or type a value" in s or "type a value" in s, 5, what="input")
    session.send_text(value)
    session.wait_for(f"▊  {value} ")
    session.send_keys("Enter")


def test_keys_tune_a_loop_device_and_undo_restores(
    tmux: TmuxSession,  # noqa: F811 - the fixture imported above
    make_loop: Callable[..., str],
    tmp_path: Path,
) -> None:
    dev = make_loop(32)
    with restored_queue(dev) as original:

        def wait(cond: Callable[[], bool], what: str) -> None:
            tmux.wait_until(lambda _s: cond(), timeout=10, what=what)

        launched = tmux.launch(
            [console_script(), "--interval", "0.5"],
            env={"XDG_STATE_HOME": str(tmp_path / "state")},
        )
        show_device(tmux, dev)
        tmux.send_keys("/")
        tmux.send_text(dev)
        tmux.send_keys("Enter")
        tmux.wait_for(f"/dev/{dev}")  # the Device tab follows the selection

        tmux.send_keys("S")
        tmux.wait_for("scheduler (now none)")
        tmux.send_keys("Down", "Enter")  # none -> mq-deadline
        wait(lambda: queue_values(dev)["scheduler"] == "mq-deadline", "scheduler in sysfs")

        type_read_ahead(tmux, "16")
        wait(lambda: queue_values(dev)["read_ahead_kb"] == "16", "read_ahead_kb in sysfs")
        tmux.wait_for("16")

        tmux.send_keys("u")
        wait(
            lambda: queue_values(dev)["read_ahead_kb"] == original["read_ahead_kb"],
            "read-ahead undone",
        )
        tmux.send_keys("u")
        wait(lambda: queue_values(dev) == original, "scheduler and nr_requests undone")

        # A change kept until quitting: the app asks, and "revert" puts it back.
        type_read_ahead(tmux, "32")
        wait(lambda: queue_values(dev)["read_ahead_kb"] == "32", "read_ahead_kb 32 in sysfs")
        tmux.send_keys("q")
        tmux.wait_for("made in this run")
        tmux.send_keys("v")
        assert tmux.wait_exit(launched, timeout=15) == 0
        assert queue_values(dev) == original
        tmux.assert_restored(launched)
