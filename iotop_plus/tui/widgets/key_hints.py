"""The bottom line of key hints for whatever has focus: Textual's Footer, as one widget.

Textual's ``Footer`` re-composes one ``FooterKey`` widget per key on every bindings change,
and the bindings change with every focus change. Restyling those widgets cost ~180 ms of the
first frame (five re-compositions of 11 keys before the first tick was on screen). This draws
the same line as a single ``Text``, and only when the keys shown actually change. A click on
a key presses it, as in the Footer.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

from iotop_plus.tui.engine.bindings import watch_bindings


class Hint(NamedTuple):
    """One key as shown: what to press, what it does, and whether it does anything now."""

    key: str
    display: str
    description: str
    enabled: bool
    action: str = ""


KEPT_ACTIONS = ("help", "quit")
"""Keys that stay on a line too narrow for all: how to learn the rest, and how to leave."""


def hint_width(hint: Hint) -> int:
    """Cells one hint takes: `` key description ``."""
    return len(hint.display) + len(hint.description) + 3


def fitting(hints: tuple[Hint, ...], width: int) -> list[Hint]:
    """The hints that fit in ``width`` cells, in order.

    When not all fit (80 columns over SSH), hints are dropped from the end but the help and
    quit keys are kept: with them a user can find everything else.
    """
    if sum(map(hint_width, hints)) <= width:
        return list(hints)
    kept = [h for h in hints if h.action in KEPT_ACTIONS]
    room = width - sum(map(hint_width, kept))
    chosen = set()
    for hint in hints:
        if hint not in kept and hint_width(hint) <= room:
            chosen.add(hint)
            room -= hint_width(hint)
        elif hint not in kept:
            break
    return [h for h in hints if h in chosen or h in kept]


class KeyHints(Widget):
    """Key hints of the screen's active bindings (those with ``show=True``), left to right."""

    DEFAULT_CSS = """
    KeyHints { dock: bottom; height: 1; }
    """

    COMPONENT_CLASSES = {"key-hints--key", "key-hints--description"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hints: tuple[Hint, ...] = ()
        """The keys shown, in order."""
        self.palette: Hint | None = None
        """The command palette's key, shown at the right end."""
        self._spans: tuple[tuple[int, int, str], ...] = ()

    def on_mount(self) -> None:
        watch_bindings(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is not self.screen:
            return
        hints: list[Hint] = []
        actions: set[str] = set()
        for _node, binding, enabled, _tooltip in screen.active_bindings.values():
            # One hint per action, as the Footer does (e.g. "j" and "down" for one move).
            if binding.show and binding.action not in actions:
                actions.add(binding.action)
                display = self.app.get_key_display(binding)
                action = binding.action.rsplit(".", 1)[-1]  # "app.quit" -> "quit"
                hints.append(Hint(binding.key, display, binding.description, enabled, action))
        palette = None
        if self.app.ENABLE_COMMAND_PALETTE:
            found = screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, _tooltip = found
                display = self.app.get_key_display(binding)
                palette = Hint(binding.key, display, binding.description, enabled)
        if tuple(hints) != self.hints or palette != self.palette:
            self.hints = tuple(hints)
            self.palette = palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-hints--key")
        text_style = self.get_component_rich_style("key-hints--description")
        line = Text(no_wrap=True, overflow="crop", end="")
        spans = []

        def add(hint: Hint) -> None:
            start = len(line)
            line.append(f" {hint.display} ", key_style)
            line.append(f"{hint.description} ", text_style)
            if not hint.enabled:
                line.stylize("dim", start)
            spans.append((start, len(line), hint.key))

        for hint in fitting(self.hints, self.size.width):
            add(hint)
        if self.palette is not None:
            room = self.size.width - len(line) - len(f" {self.palette.display} ")
            room -= len(f"{self.palette.description} ")
            if room > 0:  # right-aligned, and only when it fits
                line.append(" " * room)
                add(self.palette)
        self._spans = tuple(spans)
        return line

    def on_resize(self) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
