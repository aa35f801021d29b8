"""Told when a screen's bindings change: the key hints redraw from ``active_bindings``.

Textual publishes ``Screen.bindings_updated_signal`` (its own Footer listens to it, on stock
Textual too), a public name it does not document. On a Textual without it, the hints look at
the screen's bindings twice a second instead.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen
from textual.widget import Widget

POLL_S = 0.5
"""How often the hints look at the bindings without the signal."""


def watch_bindings(widget: Widget, changed: Callable[[Screen[object]], None]) -> None:
    """Call ``changed(screen)`` when ``widget``'s screen's bindings change, from now on, as
    long as ``widget`` is mounted."""
    signal = getattr(widget.screen, "bindings_updated_signal", None)
    subscribe = getattr(signal, "subscribe", None)
    if subscribe is not None:
        subscribe(widget, changed)
        return
    widget.set_interval(POLL_S, lambda: changed(widget.screen), name="bindings-poll")
