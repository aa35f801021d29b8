"""An SSH drop must not keep an experiment silently (#22 item 3, the SIGHUP ruling).

The real console script runs in tmux on a loop device of the test's own; read-ahead is changed
with `R`, then the terminal goes away (the tmux server is killed: the app gets SIGHUP and its
tty is gone). The change stays in force but is not kept: `restore` must offer it, and
`restore --keep` must close it as kept, leaving the value. Every run has its own
``--state-dir``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.test_tui_tmux import console_script, device_row, wait_for_table
from tests.support.queue_guard import restored_queue
from tests.support.tmux import TmuxSession, tmux_available
from tests.support.wait import holds_within

pytestmark = [pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    name = make_loop(32)
    with restored_queue(name):
        yield name


def read_ahead(device: str) -> str:
    return (Path("/sys/block") / device / "queue" / "read_ahead_kb").read_text().strip()


def restore(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(state.parent)}
    return subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "restore", *args],
        capture_output=True, text=True, env=env, cwd="/", timeout=60,
    )  # fmt: skip


def wait(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    assert holds_within(condition, timeout), f"timed out waiting for {what}"


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_closed_terminal_leaves_the_change_for_restore_to_offer_and_keep(
    loop: str, tmp_path: Path
) -> None:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    state = tmp_path / "state"
    original = read_ahead(loop)
    assert original != "48"
    tmux = TmuxSession(80, 24)
    try:
        launched = tmux.launch(
            [console_script(), "--state-dir", str(state), "--interval", "0.5", loop]
        )
        tmux.wait_until(lambda s: device_row(s, loop) is not None, 20, what=f"{loop}'s row")
        wait_for_table(tmux)
        tmux.send_keys("R")  # the selected device's read-ahead: a picker
        # The picker's own title: the Tune tab it opens over says "read-ahead" too, and
        # digits typed before the picker is up go to the main screen.
        tmux.wait_for(f"{loop} read-ahead (now", timeout=10)
        tmux.send_text("48")
        tmux.wait_for(re.compile(r"▊\s+48\s"), timeout=10)  # typed into the value box
        tmux.send_keys("Enter")
        assert holds_within(lambda: read_ahead(loop) == "48", 30), (
            f"the change did not reach sysfs; the screen:\n{tmux.capture()}"
        )
        pid = tmux.program_pid(launched)
    finally:
        tmux.kill()  # the session is gone: SIGHUP, and no terminal any more
    wait(lambda: not alive(pid), "the app to end after its terminal went away")

    assert read_ahead(loop) == "48"  # still in force
    records = [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]
    assert [r["record"] for r in records] == ["intent", "change"]  # no keep record
    offered = restore(state, "--dry-run")
    assert (offered.returncode, offered.stdout) == (
        0,
        f"{loop} read_ahead_kb: 48 -> {original}, would restore (dry run)\n",
    ), offered.stderr
    kept = restore(state, "--keep")
    assert (kept.returncode, kept.stdout) == (
        0,
        f"{loop} read_ahead_kb: 48 (original {original}), kept\n",
    ), kept.stderr
    assert read_ahead(loop) == "48"  # kept: nothing written
    closed = [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()][-1]
    assert (closed["record"], closed["reason"]) == ("closed", "kept")
    again = restore(state, "--dry-run")
    assert (again.returncode, again.stdout) == (0, "")
    assert "nothing to restore" in again.stderr


def test_D_left_on_by_a_closed_terminal_is_restored_and_never_blocks_set(
    loop: str, tmp_path: Path, delayacct_off: Path
) -> None:
    """#22 item 4: D is a host setting, journaled; a hangup leaves it as a leftover that
    `restore` puts back, and that never refuses a device command."""
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    state = tmp_path / "state"
    tmux = TmuxSession(120, 36)
    try:
        launched = tmux.launch(
            [console_script(), "--state-dir", str(state), "--interval", "0.5", loop]
        )
        tmux.wait_until(lambda s: device_row(s, loop) is not None, 20, what=f"{loop}'s row")
        tmux.send_keys("p")  # the Processes tab
        tmux.wait_for("IO% off", timeout=10)
        tmux.send_keys("D")
        wait(lambda: delayacct_off.read_text().strip() == "1", "delay accounting on")
        pid = tmux.program_pid(launched)
    finally:
        tmux.kill()
    wait(lambda: not alive(pid), "the app to end after its terminal went away")
    assert delayacct_off.read_text().strip() == "1"

    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    setting = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "set", loop,
         "read_ahead_kb=64"],
        capture_output=True, text=True, env=env, cwd="/", timeout=60,
    )  # fmt: skip
    assert setting.returncode == 0, setting.stderr  # a host leftover refuses no device command
    offered = restore(state, "--dry-run")
    assert offered.stdout == "host kernel.task_delayacct: 1 -> 0, would restore (dry run)\n"
    done = restore(state)
    assert (done.returncode, done.stdout) == (
        0,
        "host kernel.task_delayacct: 1 -> 0, restored\n",
    ), done.stderr
    assert delayacct_off.read_text().strip() == "0"
    assert restore(state, "--dry-run").stdout == ""


def test_the_hangup_line_stays_on_the_terminal_and_names_the_state_directory(
    loop: str, tmp_path: Path
) -> None:
    """A SIGHUP with the terminal still there (``kill -HUP``): the line that says the change
    is left in force is written after the alternate screen is left, so it stays on screen,
    and its ``restore`` hint carries the ``--state-dir`` the run used."""
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    state = tmp_path / "state"
    with TmuxSession(220, 40) as tmux:
        launched = tmux.launch(
            [console_script(), "--state-dir", str(state), "--interval", "0.5", loop]
        )
        tmux.wait_until(lambda s: device_row(s, loop) is not None, 20, what=f"{loop}'s row")
        wait_for_table(tmux)
        tmux.send_keys("R")
        tmux.wait_for(f"{loop} read-ahead (now", timeout=10)
        tmux.send_text("48")
        tmux.wait_for(re.compile(r"▊\s+48\s"), timeout=10)
        tmux.send_keys("Enter")
        assert holds_within(lambda: read_ahead(loop) == "48", 30), tmux.capture()
        os.kill(tmux.program_pid(launched), signal.SIGHUP)
        assert tmux.wait_exit(launched, 15) == 128 + signal.SIGHUP
        flat = "".join(tmux.capture().split())
        hint = f"`iotop-plus--state-dir{state}restore`"
        assert "iotop-plus:hangup:1settingchangeleftinforce,notkept;" + hint in flat, flat
