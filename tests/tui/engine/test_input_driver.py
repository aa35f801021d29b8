"""#25: the TUI's input thread sleeps until a key comes (:mod:`iotop_plus.tui.engine.input_driver`),
and still reads keys, a lone Escape, and stops when the driver does."""

from __future__ import annotations

import os
import pty
import selectors
import signal
import threading
import tty
from collections.abc import Iterator
from typing import Any

import pytest
from textual import events
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from iotop_plus.tui.engine.input_driver import PENDING_POLL_S, QuietInputDriver, quiet_driver
from tests.support.wait import holds_within


class CountingSelector(selectors.SelectSelector):
    """Textual's selector, noting the timeout of every ``select``."""

    timeouts: list[float | None] = []

    def select(self, timeout: float | None = None) -> Any:
        CountingSelector.timeouts.append(timeout)
        return super().select(timeout)


Reading = tuple[QuietInputDriver, int, list[Message]]


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reading]:
    """The driver reading a pseudo-terminal, its thread running; the terminal's other end and
    the messages the thread sends."""
    handlers = (signal.getsignal(signal.SIGTSTP), signal.getsignal(signal.SIGCONT))
    monkeypatch.setattr(selectors, "SelectSelector", CountingSelector)
    CountingSelector.timeouts = []
    master, slave = pty.openpty()
    tty.setraw(slave)  # as the driver puts the terminal: a key is read without its Enter
    got: list[Message] = []
    quiet = QuietInputDriver.__new__(QuietInputDriver)
    # The constructor wants a running loop for messages sent to the app: none are sent here.
    monkeypatch.setattr("asyncio.get_running_loop", lambda: None)
    quiet.__init__(App())  # type: ignore[misc]
    quiet.fileno = slave
    quiet.process_message = got.append  # type: ignore[method-assign,assignment]
    thread = threading.Thread(target=quiet.run_input_thread, daemon=True)
    thread.start()
    try:
        yield quiet, master, got
    finally:
        quiet.exit_event.set()
        thread.join(timeout=5)
        assert not thread.is_alive(), "the input thread did not stop when the driver did"
        quiet.close()
        os.close(master)
        os.close(slave)
        signal.signal(signal.SIGTSTP, handlers[0])
        signal.signal(signal.SIGCONT, handlers[1])


def keys(got: list[Message]) -> list[str]:
    return [m.key for m in got if isinstance(m, events.Key)]


def test_it_reads_keys_and_a_lone_escape_and_polls_only_while_one_is_pending(
    driver: Reading,
) -> None:
    _, master, got = driver
    os.write(master, b"a")
    assert holds_within(lambda: keys(got) == ["a"], 5), got
    # Nothing pending: each wait had no timeout (Textual's own thread wakes every 0.1 s).
    assert CountingSelector.timeouts and set(CountingSelector.timeouts) == {None}
    os.write(master, b"\x1b")
    assert holds_within(lambda: keys(got) == ["a", "escape"], 5), got
    assert PENDING_POLL_S in CountingSelector.timeouts  # the Escape's wait was timed


@pytest.mark.usefixtures("driver")
def test_it_stops_while_asleep() -> None:
    assert holds_within(lambda: CountingSelector.timeouts == [None], 5)
    # The fixture stops it, and fails if the thread is still in its select after 5 s.


def test_the_app_uses_it_only_for_textuals_linux_driver() -> None:
    assert quiet_driver(LinuxDriver) is QuietInputDriver
    assert quiet_driver(HeadlessDriver) is HeadlessDriver
