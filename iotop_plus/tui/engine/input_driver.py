"""A Linux driver whose input thread sleeps until a key comes.

Textual's :class:`~textual.drivers.linux_driver.LinuxDriver` reads the terminal in a thread
that wakes ten times a second, whatever happens, to see whether it should stop and whether a
lone Escape has waited long enough to be a key. On an idle screen that was 1.3 ms of CPU a
second here, an eighth of the whole TUI's.

This thread waits on the terminal and on a pipe that is written when the driver stops. It wakes
on its own only while the parser holds part of an escape sequence (a lone Escape, which is a key
once nothing follows it within Textual's delay). Everything it reads is handled as Textual's
thread handles it.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from contextlib import suppress
from threading import Event
from typing import Any

from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from iotop_plus.tui import engine

PENDING_POLL_S = 0.1
"""How often the thread wakes while the parser waits to see whether an escape sequence goes on
(Textual's own poll)."""


class _WakingEvent(Event):
    """An :class:`Event` that also writes to a pipe when set, to wake a ``select`` on it."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self.wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        with suppress(OSError):  # the pipe is full (the thread is awake anyway) or closed
            os.write(self.wake_fd, b"x")


class QuietInputDriver(LinuxDriver):
    """Textual's Linux driver, its input thread asleep until there is something to read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.exit_event = _WakingEvent(self._wake_w)

    def close(self) -> None:
        super().close()
        for fd in (self._wake_r, self._wake_w):
            with suppress(OSError):
                os.close(fd)

    def run_input_thread(self) -> None:
        """As Textual's, but ``select`` waits without a timeout while no escape sequence is
        pending, and the stop's pipe wakes it."""
        fileno, wake = self.fileno, self._wake_r
        selector = selectors.SelectSelector()
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        def handle(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            for key, _mask in events:
                if key.fd == wake:
                    _drain(wake)
                    continue
                text = decode(os.read(fileno, 1024 * 4), final=final)
                if not text:  # stdin is piped and at its end
                    break
                for event in parser.feed(text):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                # (a parser without this private field: Textual's own 0.1 s poll)
                pending = getattr(parser, "_timeout_time", 0) is not None
                handle(selector.select(PENDING_POLL_S if pending else None))
            selector.unregister(fileno)
            handle(selector.select(PENDING_POLL_S), final=True)
        finally:
            selector.close()
            with suppress(EOFError, ParseError):
                for _event in parser.feed(""):
                    pass


def _drain(fd: int) -> None:
    """Read what the pipe holds (a stop's wake-up bytes)."""
    with suppress(OSError):  # empty (EAGAIN)
        while os.read(fd, 512):
            pass


def quiet_driver(driver: type[Driver]) -> type[Driver]:
    """:class:`QuietInputDriver` where Textual chose its Linux driver and the engine is on,
    else ``driver`` (the headless driver of tests, another one named in ``TEXTUAL_DRIVER``)."""
    return QuietInputDriver if driver is LinuxDriver and engine.active() else driver
