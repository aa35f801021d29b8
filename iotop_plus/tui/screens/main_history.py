"""The main screen's history keys (``[ ] { } g l m M w``): each is a move of the scrubber.

:class:`HistoryKeys` is a collaborator the main screen holds: it is given the scrubber (the
collaborator that moves the shown frame's position and says what it cannot do), the screen
(the jump and diff dialogs open over it) and the settings, and runs each key. What the
Processes and Cgroups tabs show in history is theirs: each reads the shown frame's mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from iotop_plus.tui.scrub import Scrubber

if TYPE_CHECKING:
    from textual.screen import Screen

    from iotop_plus.config import Config
    from iotop_plus.tui.diff_view import Window

WHO_HISTORY_HELP = (
    "History and replay: the Processes and Cgroups tabs show what the frame on screen carries. "
    "The history keeps, while the tab is shown, the top processes with their cgroup and the "
    "cgroups doing I/O; a recording (format 4) keeps the top processes with their command "
    "lines and cgroup, and the cgroups doing I/O with their split per device. A frame without "
    "them says 'not recorded', never shows the live figures. Under the cgroups, the selected "
    "one's I/O per device (bytes and requests per second)."
)
"""The help's paragraph on what the history and replay show of the processes and cgroups."""


class HistoryKeys:
    """The history keys' actions: each is a move of :attr:`scrubber`.

    Args:
        scrubber: The shown frame's position in the timeline, and its moves.
        screen: Where the jump and diff dialogs open (the main screen).
        config: The settings (``diff_minutes``).
    """

    def __init__(self, scrubber: Scrubber, screen: Screen[Any], config: Config) -> None:
        self.scrubber = scrubber
        self.screen = screen
        self.config = config
        self.diff_marks: dict[str, Window] = {}
        """Windows marked with ``m`` (``a``) and ``M`` (``b``), not yet compared."""

    def action_mark_window(self, which: str) -> None:
        """``m``/``M``: mark window A/B as the ``diff_minutes`` ending at the frame shown;
        with both marked, show what changed."""
        end = self.scrubber.origin()
        if end is None:
            return
        pair = mark(self.diff_marks, which, end, self.config.diff_minutes, self.screen.notify)
        if pair is not None:
            self._show_diff(*pair)

    def action_compare_recent(self) -> None:
        """``w``: the ``diff_minutes`` ending at the frame shown against the ones before."""
        end = self.scrubber.origin()
        if end is not None:
            a, b = windows_before(end, self.config.diff_minutes)
            self._show_diff(a, b)

    def _show_diff(self, a: Window, b: Window) -> None:
        from iotop_plus.tui.diff_view import show_diff  # (and the recorder's modules: late)

        show_diff(self.screen, self.scrubber.timeline, a, b, self.scrubber.zone)

    def action_step(self, n: int) -> None:
        """One sample back or forward in the history."""
        self.scrubber.step(n)

    def action_seek(self, seconds: float) -> None:
        """One minute back or forward in the history."""
        self.scrubber.seek(seconds)

    def action_live(self) -> None:
        """Back to live (from history, or from a pause)."""
        self.scrubber.live()

    def action_jump(self) -> None:
        """Ask for a time and go there."""
        hint = self.scrubber.jump_hint()
        if hint is not None:
            from iotop_plus.tui.screens.jump import JumpScreen

            self.screen.app.push_screen(JumpScreen(self.scrubber.jump, hint))

    def check(self, action: str) -> bool | None:
        """``l`` is offered (and shown) only away from live."""
        return action != "live" or self.scrubber.away_from_live


def windows_before(end: float, minutes: float) -> tuple[Window, Window]:
    """The ``minutes`` ending at ``end`` (B) and the ``minutes`` before them (A)."""
    n = minutes * 60.0
    return (end - 2 * n, end - n), (end - n, end)


def mark(
    marks: dict[str, Window], which: str, end: float, minutes: float, say: Callable[[str], None]
) -> tuple[Window, Window] | None:
    """Mark window ``which`` (``a`` or ``b``) as the ``minutes`` ending at ``end``; both
    marked: the pair to compare (and the marks are cleared)."""
    marks[which] = (end - minutes * 60.0, end)
    if "a" in marks and "b" in marks:
        a, b = marks.pop("a"), marks.pop("b")
        return a, b
    other = "M (window B)" if which == "a" else "m (window A)"
    say(f"window {which.upper()} marked ({minutes:g} min ending here); now {other}")
    return None
