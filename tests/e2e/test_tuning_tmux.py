"""An engineer tunes a loop device from the real console script, then undoes it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_tui_tmux import console_script, tmux, wait_for_table  # noqa: F401 - fixture
from tests.support.queue_guard import queue_values, restored_queue
from tests.support.tmux import TmuxError, TmuxSession

pytestmark = [pytest.mark.root, pytest.mark.slow]


def type_read_ahead(session: TmuxSession, device: str, value: str) -> None:
    """R opens the read-ahead picker; typing digits goes to its input; Enter confirms.

    On a loaded machine the digits once arrived before the picker had taken focus (a fresh
    clone's full run): the picker is then closed and opened again.
    """
    typed = re.compile(rf"▊\s+{re.escape(value)}\s")
    for attempt in range(3):
        session.send_keys("R")
        # The picker's own title: the Tune tab it opens over says "read-ahead" too.
        session.wait_for(f"{device} read-ahead (now")
        session.send_text(value)
        try:
            session.wait_for(typed, timeout=5)
            break
        except TmuxError:
            if attempt == 2:
                raise
            if "read-ahead (now" in session.capture():
                session.send_keys("Escape")  # close the picker, then try again
                session.wait_gone("read-ahead (now")
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
            # As root the journal is /var/lib/iotop-plus whatever XDG says (#11): not in a test.
            [console_script(), "--state-dir", str(tmp_path / "state"), "--interval", "0.5"],
        )
        wait_for_table(tmux)
        tmux.send_keys("a")  # loop devices are hidden by default
        tmux.send_keys("/")
        tmux.wait_for("filter devices by name")  # the filter box is open and focused
        tmux.send_text(dev)
        tmux.wait_for(f"▊  {dev} ")
        tmux.send_keys("Enter")  # selects the exact match
        tmux.wait_for(f"/dev/{dev}")  # the Device tab follows the selection
        # Its settings are read in a worker: the panel shows "…" until they arrive.
        tmux.wait_for(re.compile(r"read_ahead_kb\s+\d+"))

        tmux.send_keys("S")
        tmux.wait_for(f"{dev} I/O scheduler (now none)")
        tmux.send_keys("Down", "Enter")  # none -> mq-deadline
        wait(lambda: queue_values(dev)["scheduler"] == "mq-deadline", "scheduler in sysfs")

        type_read_ahead(tmux, dev, "16")
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
        type_read_ahead(tmux, dev, "32")
        wait(lambda: queue_values(dev)["read_ahead_kb"] == "32", "read_ahead_kb 32 in sysfs")
        tmux.send_keys("q")
        tmux.wait_for("made in this run")
        tmux.send_keys("v")
        assert tmux.wait_exit(launched, timeout=15) == 0
        assert queue_values(dev) == original
        tmux.assert_restored(launched)
