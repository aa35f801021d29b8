"""The main screen's own keys (pause, interval, help), and how a collaborator's key actions
become the screen's.

Textual looks a key's action up on the screen. The screen's collaborators (:class:`ScreenKeys`
here, the history, table and side-panel keys) each run their keys in ``action_*`` methods,
and :func:`take_actions` makes those the screen's actions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from textual.app import App

from iotop_plus.tui.screens.main_keys import step_interval
from iotop_plus.tui.scrub import Scrubber
from iotop_plus.tui.shown import LIVE, PAUSED, Shown


def take_actions(screen: object, collaborators: Iterable[object]) -> None:
    """Make each ``action_*`` method of ``collaborators`` an action of ``screen``: Textual
    looks a key's action up on the screen, and the collaborator runs it."""
    for collaborator in collaborators:
        for name in dir(type(collaborator)):
            if name.startswith("action_"):
                setattr(screen, name, getattr(collaborator, name))


class KeysView(Protocol):
    """What the screen's own keys act on (the main screen)."""

    shown: Shown
    interval: float

    @property
    def app(self) -> App[Any]: ...

    def go_live(self) -> None: ...


class ScreenKeys:
    """``space``, ``+``, ``-`` and ``?``: the pause, the interval and the help.

    Args:
        view: The main screen: the shown frame and the interval are its reactives.
        scrubber: Moves the shown frame in history (``space`` there: back to live).
    """

    def __init__(self, view: KeysView, scrubber: Scrubber) -> None:
        self.view = view
        self.scrubber = scrubber

    def action_pause(self) -> None:
        """Freeze every view; sampling and history continue (in history: back to live)."""
        view = self.view
        mode = view.shown.mode
        if mode == LIVE:
            view.shown = Shown(view.shown.frame, PAUSED)
        elif mode == PAUSED:
            view.go_live()
        else:
            self.scrubber.live()

    def action_faster(self) -> None:
        """Sample more often."""
        self.view.interval = step_interval(self.view.interval, -1)

    def action_slower(self) -> None:
        """Sample less often."""
        self.view.interval = step_interval(self.view.interval, 1)

    def action_help(self) -> None:
        """Open the help screen."""
        from iotop_plus.tui.screens.help import HelpScreen

        self.view.app.push_screen(HelpScreen())
