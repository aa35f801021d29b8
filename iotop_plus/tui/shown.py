"""The shown frame: the frame on the main screen, with its mode and its position.

The main screen holds one :class:`Shown` (its reactive ``shown``). It changes when a live
frame arrives and the screen follows live, when ``space`` pauses, and when a scrub key moves
the position in the history or a replay. Every view reads what it needs of it:

* a widget that shows the frame has ``show_shown(shown)`` (:class:`FrameViewer`);
* :class:`ShownViews` tells each such widget under the screen, in the order they were found,
  and tells a widget mounted later the frame on screen at once. Nothing calls the widgets one
  by one, and no widget asks the screen for the frame.

The modes are those the header shows:

* LIVE: every frame is shown as it arrives;
* PAUSED at T (``space``): the display is frozen on the frame shown;
* HISTORY at T (``[`` ``]`` ``{`` ``}`` ``g``): a frame of the frame store is shown;
  sampling goes on and the store keeps filling; ``l`` (or ``space``) returns to live;
* REPLAY at T: the frames come from a recording (:mod:`iotop_plus.tui.replay`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from textual.dom import DOMNode

from iotop_plus.sampling.frame.model import Frame

LIVE, PAUSED, HISTORY, REPLAY = "live", "paused", "history", "replay"
"""The modes the header shows."""


@dataclass(frozen=True, eq=False)
class Shown:
    """The frame on screen, its mode and its position.

    Compared by identity: setting it again shows it again (a view that now wants what the
    frame carries), and no frame's figures are compared to decide anything.
    """

    frame: Frame | None = None
    """The frame on screen (None before the first one)."""
    mode: str = LIVE
    """``live``, ``paused``, ``history`` or ``replay``."""
    at: float | None = None
    """Wall time of the position in the timeline (history, replay); None live or paused."""

    @property
    def paused(self) -> bool:
        """Live frames are not shown (paused, or a frame of the history is)."""
        return self.mode in (PAUSED, HISTORY)

    @property
    def recorded(self) -> bool:
        """A frame of the history or a recording is shown: a part it lacks was not recorded
        (never the live one from before)."""
        return self.mode in (HISTORY, REPLAY)

    @property
    def wall_time(self) -> float | None:
        """Wall time of the frame on screen."""
        return self.frame.wall_time if self.frame is not None else None


@runtime_checkable
class FrameViewer(Protocol):
    """A widget that shows (part of) the frame on screen."""

    def show_shown(self, shown: Shown) -> None:
        """Show what this widget shows of ``shown`` (called for every change of it)."""


class ShownViews:
    """Tells the widgets that show the frame (and a few views of the screen's own) about
    each shown frame.

    Args:
        current: The shown frame now (the screen's reactive).
    """

    def __init__(self, current: Callable[[], Shown]) -> None:
        self._current = current
        self._views: list[tuple[DOMNode | None, Callable[[Shown], object]]] = []
        self._widgets: set[int] = set()

    def follow(self, view: Callable[[Shown], object], owner: DOMNode | None = None) -> None:
        """Call ``view`` with every shown frame from now on (only while ``owner``, when
        given, is attached to the app)."""
        self._views.append((owner, view))

    def follow_tree(self, root: DOMNode) -> None:
        """Follow every :class:`FrameViewer` under ``root`` (itself included) not followed
        yet, and show each what is on screen now: the widgets just mounted there."""
        current = self._current()
        for node in root.walk_children(with_self=True):
            if isinstance(node, FrameViewer) and id(node) not in self._widgets:
                self._widgets.add(id(node))
                self.follow(node.show_shown, node)
                node.show_shown(current)

    def again(self) -> None:
        """Tell every view the frame on screen again (a view now wants what it carries)."""
        if self._current().frame is not None:
            self.publish(self._current())

    def publish(self, shown: Shown) -> None:
        """Tell every view followed (whose widget is attached to the app) about ``shown``."""
        for owner, view in self._views:
            if owner is None or owner.is_attached:
                view(shown)
