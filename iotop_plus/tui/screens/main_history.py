"""The main screen's history keys (``[ ] { } g l``).

A mixin of :class:`~iotop_plus.tui.screens.main.MainScreen` that hands each key to the
screen's :class:`~iotop_plus.tui.scrub.Scrubber`, the collaborator that moves the position
and says what it cannot do.
"""

from __future__ import annotations

from iotop_plus.tui.scrub import Scrubber


class HistoryActions:
    """The history keys' actions: each is a move of :attr:`scrubber`."""

    scrubber: Scrubber
    """The frame on screen when it is not the live one (the main screen's)."""

    def action_step(self, n: int) -> None:
        """One sample back or forward in the history."""
        self.scrubber.step(n)

    def action_seek(self, seconds: float) -> None:
        """One minute back or forward in the history."""
        self.scrubber.seek(seconds)

    def action_live(self) -> None:
        """Back to live (from history, or from a pause)."""
        self.scrubber.live()

    def check_history_action(self, action: str) -> bool | None:
        """``l`` is offered (and shown) only away from live."""
        return action != "live" or self.scrubber.away_from_live
