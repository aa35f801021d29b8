"""Frames that come while the main screen composes, shown as soon as it is mounted.

The sampler thread starts before the main screen is pushed, so the first frames are read while
Textual composes and mounts it. Posted to the app, they would wait behind the screen's first
paint (an empty table); held here, the screen's ``on_mount`` shows them, and its first paint
already has figures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.messages import FrameReady


class EarlyFrames:
    """Holds the frames posted before :meth:`release`; posts everything after it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[Frame] | None = []
        self.released = False
        """Whether the screen has taken the held frames (later ones are posted as they come)."""

    def hold(self, post: Callable[[Message], object]) -> Callable[[Message], object]:
        """``post`` (the app's post_message, called from the sampler thread), holding frames
        until :meth:`release`; other messages (problems) go through at once."""

        def posting(message: Message) -> object:
            if isinstance(message, FrameReady):
                with self._lock:
                    if self._held is not None:
                        self._held.append(message.frame)
                        return True
            return post(message)

        return posting

    @property
    def held(self) -> int:
        """How many frames are held now."""
        with self._lock:
            return len(self._held or ())

    def release(self, take: Callable[[Frame], object]) -> None:
        """Hand the held frames to ``take``, oldest first; from now on frames are posted."""
        with self._lock:
            held, self._held = self._held or [], None
            self.released = True
        for frame in held:
            take(frame)
