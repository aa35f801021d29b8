"""A replay's reads of its recording, off the UI thread.

Decoding a chunk of a recording can take hundreds of milliseconds; done on the UI thread it
would leave ``q`` and the scrub keys unanswered meanwhile. :class:`ReplayReads` runs each
lookup on a thread of its own, one at a time (the recording's chunk cache is not shared
between readers), and hands the result to the UI thread as a :class:`ReplayRead` message.
A lookup asked for while another is in flight supersedes it: the older one's result is
dropped, and one not started yet never reads.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.message import Message

from iotop_plus.text import printable


@dataclass
class ReplayRead(Message):
    """A lookup's result, to be applied on the UI thread (:meth:`apply`)."""

    apply: Callable[[], object]
    """Shows the result (a no-op when a newer lookup superseded it meanwhile)."""


class ReplayReads:
    """Lookups of a recording on a worker thread; only the newest one's result is shown.

    Args:
        post: Posts a message to the screen (Textual's ``post_message``: thread-safe).
        warn: Says one line on the UI thread (a lookup that failed).
    """

    def __init__(self, post: Callable[[Message], object], warn: Callable[[str], object]) -> None:
        self._post = post
        self._warn = warn
        self._lock = threading.Lock()
        """Held while a lookup reads: one reader of the recording at a time."""
        self._asked = 0
        self.in_flight = False
        """Whether a lookup was asked for and its result not shown yet."""

    def submit(self, lookup: Callable[[], Any], done: Callable[[Any], object]) -> None:
        """Run ``lookup`` on a worker thread, then ``done(result)`` on the UI thread, unless
        a later :meth:`submit` came first."""
        self._asked += 1
        ticket = self._asked
        self.in_flight = True

        def current() -> bool:
            return ticket == self._asked

        def arrived(result: Any) -> None:
            if current():
                self.in_flight = False
                done(result)

        def failed(line: str) -> None:
            if current():
                self.in_flight = False
                self._warn(line)

        def run() -> None:
            with self._lock:
                if not current():
                    return  # superseded before it began
                try:
                    result = lookup()
                except Exception as exc:  # a damaged recording: say so, keep the frame shown
                    line = printable(f"cannot read the recording: {exc}".splitlines()[0])
                    self._deliver(ReplayRead(lambda: failed(line)))
                    return
            self._deliver(ReplayRead(lambda: arrived(result)))

        threading.Thread(target=run, name="iotop-plus-replay-read", daemon=True).start()

    def _deliver(self, message: ReplayRead) -> None:
        # The app may have quit while this read ran: its loop is gone, nothing to show.
        with contextlib.suppress(Exception):
            self._post(message)
