"""Keys typed ahead of a dialog reach the dialog.

A fast typist over SSH (or a paste) sends ``R 4096 Enter`` in one burst. Textual forwards
every key to the screen that has focus *when the key arrives*, so all five go to the main
screen before ``R`` has pushed the read-ahead picker. When they come back up to the app
unhandled, Textual checks them against the bindings of the screen shown *now*: Enter picks
the picker's highlighted value, while the digits, which no binding takes, are dropped. The
user typed 4096 and got the current value, or a digit short of what they typed.

Here a key that comes back up from a screen that has since been covered by another one is
forwarded again, as new, to the screen on top: the digits go into the picker's input and
Enter submits what was typed.
"""

from __future__ import annotations

from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from textual import events
from textual.app import App
from textual.screen import Screen

from iotop_plus.tui.engine.keys import forward_again

ReturnType = TypeVar("ReturnType")


class TypeAheadApp(App[ReturnType]):
    """An app whose keys typed ahead of a pushed screen go to that screen."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sent_to: WeakKeyDictionary[events.Key, Screen[object]] = WeakKeyDictionary()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            if not event.is_forwarded:
                self._sent_to[event] = self.screen  # Textual forwards it there next
            elif self._covered_since(self._sent_to.pop(event, None)):
                forward_again(self, event)
                return
        await super().on_event(event)

    def _covered_since(self, screen: Screen[object] | None) -> bool:
        """Whether ``screen`` is still open but no longer on top."""
        stack = self.screen_stack
        return screen is not None and screen is not stack[-1] and screen in stack
