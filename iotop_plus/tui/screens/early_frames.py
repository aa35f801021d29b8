"""Frames that come while the main screen composes, shown as soon as it is mounted (#25).

The sampler thread starts before the app runs (or, under Pilot, before the main screen is
pushed), so the first frames are read while Textual starts, composes and mounts the screen.
Posted to the app, they would wait behind the screen's first paint (an empty table); held here,
the screen's ``on_mount`` shows them, and its first paint already has figures. A problem the
thread reports meanwhile is held too, and posted then (the app may not be running yet).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message

from iotop_plus.sampling.frame import Frame
from iotop_plus.tui.messages import FrameReady


class EarlyFrames:
    """Holds the messages posted before :meth:`release`; posts everything after it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[Message] | None = []
        self._post: Callable[[Message], object] | None = None
        self.released = False
        """Whether the screen has taken the held frames (later ones are posted as they come)."""

    def hold(self, post: Callable[[Message], object]) -> Callable[[Message], object]:
        """``post`` (the app's post_message, called from the sampler thread), holding the
        messages until :meth:`release`: the thread may start before the app runs."""
        self._post = post

        def posting(message: Message) -> object:
            with self._lock:
                if self._held is not None:
                    self._held.append(message)
                    return True
            return post(message)

        return posting

    @property
    def held(self) -> int:
        """How many frames are held now."""
        with self._lock:
            return sum(isinstance(m, FrameReady) for m in self._held or ())

    def release(self, take: Callable[[Frame], object]) -> None:
        """Hand the held frames to ``take`` and post the other messages (problems), oldest
        first; from now on everything is posted."""
        with self._lock:
            held, self._held = self._held or [], None
            self.released = True
        for message in held:
            if isinstance(message, FrameReady):
                take(message.frame)
            elif self._post is not None:
                self._post(message)
