"""A key handed on again, as new, to whatever has focus on the screen on top now.

With the engine on, the key goes straight to the focused widget (or the screen) as Textual
forwards a key that has just arrived (``Widget._forward_event``). With it off, it is posted to
the app as a key just typed, which Textual then forwards the same way, after checking the
app's priority bindings as it does for any new key.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App

from iotop_plus.tui import engine


def forward_again(app: App[Any], key: events.Key) -> None:
    """Send a copy of ``key`` to the focused widget (or the screen) of ``app``'s top screen."""
    fresh = events.Key(key.key, key.character)
    if engine.active():
        (app.focused or app.screen)._forward_event(fresh)
    else:
        app.post_message(fresh)
