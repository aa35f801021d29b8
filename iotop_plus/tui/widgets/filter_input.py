"""The device name filter's text box: Enter and Esc are handled in turn with the typing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import events
from textual.widgets import Input


class FilterInput(Input):
    """An Input whose Enter and Esc take effect in order with the keys typed around them.

    Textual types a printable key into the box when the box takes it from its queue, but runs
    a binding (Enter, Esc) only once the key has bubbled up to the app. In a burst (a paste,
    a fast typist over SSH: ``/loop2`` Enter in one go) a priority Enter ran before the
    queued ``loop2`` was typed, and a plain Enter after the key typed next. Here both are
    handled as the box takes them from its queue; keys queued behind Enter were meant for
    the table, so they are sent back to the app, which hands them to whatever has focus now.

    Args:
        done: Called with the text on Enter (keep the filter, give the keyboard back).
        clear: Called on Esc (drop the filter). Without them the box is a plain Input.
    """

    def __init__(
        self,
        *,
        done: Callable[[str], object] | None = None,
        clear: Callable[[], object] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._when_done = done
        self._when_cleared = clear

    async def on_key(self, event: events.Key) -> None:
        """Runs before Input's own key handler, which types the key unless this one prevents
        it (Textual calls a class's handler before its base class's)."""
        if self.app.focused is not self:
            # Forwarded while the box had focus, queued behind Enter or Esc: not filter text.
            event.stop()
            event.prevent_default()
            self.app.post_message(events.Key(event.key, event.character))
            return
        if event.key in ("enter", "escape"):
            event.stop()
            event.prevent_default()
            if event.key == "enter":
                self._done()
            else:
                self._clear()
            return

    def _done(self) -> None:
        """Keep the filter and give the keyboard back (``done``)."""
        if self._when_done is not None:
            self._when_done(self.value)
        else:  # a plain Input
            self.post_message(self.Submitted(self, self.value))

    def _clear(self) -> None:
        if self._when_cleared is not None:
            self._when_cleared()
