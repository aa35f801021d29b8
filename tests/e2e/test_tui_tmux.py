"""The installed ``iotop-plus`` console script, driven in tmux like a person at a terminal.

An SRE starts ``iotop-plus`` while fio reads from a device, sees that device's r/s on screen,
freezes the display with space to read it, unfreezes, and quits. Whatever ends the app (q,
Ctrl-C, SIGTERM, SIGHUP from a dropped SSH link), the terminal must be handed back sane.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.tmux import TmuxError, TmuxSession, tmux_available

pytestmark = pytest.mark.slow  # the TUI (or a Textual app) in tmux

INTERVAL = 0.5
"""The refresh interval the app is started with, in seconds."""

STATE_DIR = tempfile.mkdtemp(prefix="iotop-plus-test-state-")
"""A private state directory (0700): tests never journal into root's /var/lib/iotop-plus."""


@pytest.fixture
def tmux() -> Iterator[TmuxSession]:
    """A 120x36 tmux session with a bash prompt; skips when tmux is missing."""
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    with TmuxSession(120, 36) as session:
        yield session


def console_script() -> str:
    """The installed ``iotop-plus``: next to this Python (the venv), else on PATH."""
    beside = Path(sys.executable).parent / "iotop-plus"
    if beside.exists():
        return str(beside)
    found = shutil.which("iotop-plus")
    if found is None:
        pytest.fail("the iotop-plus console script is not installed (pip install -e .)")
    return found


# -- reading the device table off the screen ------------------------------------------------

_BOX = "│┃|▏▕ "


def header_line(screen: str) -> str | None:
    """The table's header row: the first line with both ``r/s`` and ``w/s`` columns."""
    for line in screen.split("\n"):
        if re.search(r"(?<!\S)r/s\b", line) and re.search(r"(?<!\S)w/s\b", line):
            return line
    return None


def device_row(screen: str, device: str) -> str | None:
    """The table row of ``device``: its name is the row's first word."""
    for line in screen.split("\n"):
        words = re.split(r"[\s│┃|]+", line.strip(_BOX + "▶►>*▸▾▼└├─"))
        if words and re.sub(r"^[^\w]+", "", words[0]) == device:
            return line
    return None


def cell(screen: str, device: str, column: str) -> str | None:
    """The text under ``column`` in ``device``'s row (the word overlapping the header)."""
    header, row = header_line(screen), device_row(screen, device)
    if header is None or row is None:
        return None
    match = re.search(rf"(?<!\S){re.escape(column)}(?!\S)", header)
    if match is None:
        return None
    start, end = match.span()
    for word in re.finditer(r"[^\s│┃|]+", row):
        if word.start() < end and word.end() > start:
            return word.group()
    return None


def number(text: str | None) -> float | None:
    """A table figure as a float (``1.2k`` style suffixes understood); None if not a number."""
    if text is None:
        return None
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([kKMG]?)", text.replace(",", ""))
    if m is None:
        return None
    return float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


def wait_for_table(tmux: TmuxSession, timeout: float = 20) -> str:
    """Wait until the device table's header is on screen."""
    return tmux.wait_until(lambda s: header_line(s) is not None, timeout, what="the table header")


def show_device(tmux: TmuxSession, device: str) -> None:
    """Make ``device`` visible: press ``a`` if loop devices are hidden by default.

    When the host has so many devices that the row is below the fold, filter by its name.
    """
    screen = wait_for_table(tmux)
    if device_row(screen, device) is not None:
        return
    try:  # give the first tick a moment
        tmux.wait_until(lambda s: device_row(s, device) is not None, 2 * INTERVAL + 1)
        return
    except TmuxError:
        tmux.send_keys("a")  # loop devices are hidden by default; `a` shows all
    try:
        tmux.wait_until(lambda s: device_row(s, device) is not None, 5, what=f"{device}'s row")
        return
    except TmuxError:
        tmux.send_keys("/")
        tmux.send_text(device)
        tmux.send_keys("Enter")
    tmux.wait_until(lambda s: device_row(s, device) is not None, 5, what=f"{device}'s row")


# -- the load -------------------------------------------------------------------------------


@pytest.fixture
def fio_read_load(make_loop: Callable[..., str], fio_bin: str) -> Iterator[str]:
    """A loop device of our own with a rate-limited, read-only fio load; yields its name."""
    device = make_loop(size_mb=64)
    fio = subprocess.Popen(
        [
            fio_bin,
            "--name=e2e",
            f"--filename=/dev/{device}",
            "--readonly",  # fio refuses to write, whatever else it is told
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=psync",
            "--rate_iops=300",
            "--time_based",
            "--runtime=300",
            "--output=/dev/null",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(0.5)
        if fio.poll() is not None:
            pytest.fail(f"fio did not start: {fio.stderr.read().decode() if fio.stderr else ''}")
        yield device
    finally:
        fio.terminate()
        try:
            fio.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fio.kill()
            fio.wait()


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# -- the story -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.root
def test_sre_watches_a_loaded_device_freezes_and_quits(
    tmux: TmuxSession, fio_read_load: str
) -> None:
    device = fio_read_load
    launched = tmux.launch(
        [console_script(), "--state-dir", STATE_DIR, "--interval", str(INTERVAL)]
    )
    show_device(tmux, device)

    # The device's r/s becomes nonzero once two samples have been taken.
    screen = tmux.wait_until(
        lambda s: (number(cell(s, device, "r/s")) or 0) > 0,
        timeout=15,
        what=f"{device}'s r/s to be nonzero",
    )
    # fio reads at 300 IOPS: the figure is of that order (a busy CI host may lag a little).
    assert 50 <= (number(cell(screen, device, "r/s")) or 0) <= 1000, device_row(screen, device)

    # Live: the row keeps changing.
    row = device_row(screen, device)
    tmux.wait_until(lambda s: device_row(s, device) not in (None, row), 10, what="a live update")

    # Frozen: PAUSED shows and the row stops changing over several intervals.
    tmux.send_keys("Space")
    screen = tmux.wait_for("PAUSED", timeout=5)
    time.sleep(INTERVAL)  # a redraw already queued when space was pressed may still land
    frozen = device_row(tmux.capture(), device)
    assert frozen is not None
    for _ in range(6):
        time.sleep(INTERVAL)
        screen = tmux.capture()
        assert "PAUSED" in screen
        assert device_row(screen, device) == frozen, "values changed while paused"

    # Live again: PAUSED goes and the row moves on.
    tmux.send_keys("Space")
    tmux.wait_gone("PAUSED", timeout=5)
    tmux.wait_until(
        lambda s: device_row(s, device) not in (None, frozen), 10, what="updates after unfreeze"
    )

    tmux.send_keys("q")
    assert tmux.wait_exit(launched, timeout=10) == 0
    tmux.assert_restored(launched)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["q", "C-c"])
def test_quitting_by_key_restores_the_terminal(tmux: TmuxSession, key: str) -> None:
    launched = tmux.launch(
        [console_script(), "--state-dir", STATE_DIR, "--interval", str(INTERVAL)]
    )
    wait_for_table(tmux)
    tmux.send_keys(key)
    assert tmux.wait_exit(launched, timeout=10) == 0
    tmux.assert_restored(launched)


@pytest.mark.slow
def test_at_80x24_the_table_fits_and_the_tabs_answer_keys() -> None:
    """Over SSH at 80x24: the basic columns fit and 1/2/3 switch table, charts and panel."""
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    with TmuxSession(80, 24) as tmux:
        launched = tmux.launch(
            [console_script(), "--state-dir", STATE_DIR, "--interval", str(INTERVAL)]
        )
        screen = wait_for_table(tmux)
        header = header_line(screen) or ""
        for column in ("r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "%util"):
            assert re.search(rf"(?<!\S){re.escape(column)}(?!\S)", header), (column, screen)
        assert all(len(line) <= 80 for line in screen.split("\n"))
        tmux.send_keys("3")  # the side panel as a tab of its own
        screen = tmux.wait_until(lambda s: header_line(s) is None, 5, what="the table to go")
        assert "read_ahead_kb" in tmux.wait_for("read_ahead_kb", timeout=5)
        tmux.send_keys("1")
        wait_for_table(tmux, timeout=5)
        tmux.send_keys("q")
        assert tmux.wait_exit(launched, timeout=10) == 0
        tmux.assert_restored(launched)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_app_cleanly(tmux: TmuxSession, signum: signal.Signals) -> None:
    launched = tmux.launch(
        [console_script(), "--state-dir", STATE_DIR, "--interval", str(INTERVAL)]
    )
    wait_for_table(tmux)
    pid = tmux.program_pid(launched)
    os.kill(pid, signum)
    rc = tmux.wait_exit(launched, timeout=10)
    # A clean exit after handling the signal, with the conventional 128+N (143, 129), as
    # the headless commands exit: a script must see that the app was stopped, not quit.
    assert rc == 128 + signum, f"exit status {rc}"
    tmux.assert_restored(launched)
    assert not Path(f"/proc/{pid}").exists(), "the app process is still alive"


@pytest.mark.slow
def test_a_dropped_connection_ends_the_app() -> None:
    """Closing the pane is a real hangup (SIGHUP, SIGCONT, the tty gone): the app must end.

    Tried a few times with the hangup at different moments, since a hang at exit can depend
    on what the app was writing when the terminal went away.
    """
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    for attempt in range(3):
        with TmuxSession(120, 36) as tmux:
            launched = tmux.launch(
                [console_script(), "--state-dir", STATE_DIR, "--interval", str(INTERVAL)]
            )
            wait_for_table(tmux)
            time.sleep(attempt * 0.4)
            pid = tmux.program_pid(launched)
            tmux.tmux("kill-pane", "-t", tmux.name)
            deadline = time.monotonic() + 10
            while running(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            alive = running(pid)
            if alive:
                os.kill(pid, signal.SIGKILL)
            assert not alive, f"attempt {attempt + 1}: the app hung after its terminal went away"


# -- the harness can tell a broken terminal from a restored one -------------------------------


TINY_APP = textwrap.dedent(
    """
    from textual.app import App
    from textual.widgets import Footer, Static

    class Tiny(App):
        BINDINGS = [("q", "quit", "Quit")]

        def compose(self):
            yield Static("TINY APP READY")
            yield Footer()

    Tiny().run()
    """
)


def test_harness_accepts_a_textual_app_that_quits(tmux: TmuxSession, tmp_path: Path) -> None:
    script = tmp_path / "tiny.py"
    script.write_text(TINY_APP)
    launched = tmux.launch([sys.executable, str(script)])
    tmux.wait_for("TINY APP READY", timeout=20)
    assert tmux.pane_value("#{alternate_on}") == "1"
    tmux.send_keys("q")
    assert tmux.wait_exit(launched) == 0
    tmux.assert_restored(launched)


def test_harness_catches_a_program_that_leaves_the_terminal_broken(tmux: TmuxSession) -> None:
    # Enters the alternate screen, turns on mouse reporting, hides the cursor, and exits.
    launched = tmux.launch(["printf", r"\e[?1049h\e[?1000h\e[?25l"])
    assert tmux.wait_exit(launched) == 0
    with pytest.raises(TmuxError) as caught:
        tmux.assert_restored(launched)
    message = str(caught.value)
    assert "alternate_on is 1, was 0" in message
    assert "mouse_standard_flag is 1, was 0" in message
    assert "cursor_flag is 0, was 1" in message


def test_harness_catches_a_terminal_left_without_echo(tmux: TmuxSession) -> None:
    launched = tmux.launch(["stty", "-echo", "-icanon"])
    assert tmux.wait_exit(launched) == 0
    with pytest.raises(TmuxError, match="stty settings changed"):
        tmux.assert_restored(launched)
