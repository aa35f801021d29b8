"""The Sync tab (key ``Y``): the selected device's fsync/fdatasync latency by file, its jbd2
journal's commits and where slow syncs wait (:mod:`iotop_plus.tui.sync_lines`).

While the panel is shown it asks its :class:`SyncFeed` for the sync and journal parts, and
the frames then carry them (:meth:`SyncPanel.show_frame`); in history and replay it shows
the frame's recorded ones, or that they were not recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from iotop_plus.tui.shown import Shown
from iotop_plus.tui.sync_lines import sync_lines
from iotop_plus.tui.widgets.while_shown import WhileShown

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame

PARTS = ("sync", "jbd2")
"""The parts the tab shows (:class:`~iotop_plus.sampling.sync.part.SyncPart`,
:class:`~iotop_plus.sampling.sync.jbd2_part.Jbd2Part`)."""


class SyncFeed(Protocol):
    """What gives the panel its parts: the main screen's frame feed."""

    def want_part(self, key: str, on: bool) -> None:
        """Frames carry part ``key`` from now on (or no longer)."""
        ...


class SyncPanel(WhileShown, VerticalScroll):
    """The Sync tab's panel."""

    DEFAULT_CSS = """
    SyncPanel { height: 1fr; }
    SyncPanel > #sync-text { width: 1fr; }
    """

    def __init__(self, feed: SyncFeed | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.feed = feed
        self.device: str | None = None
        self._frame: Frame | None = None
        self._recorded = False

    def compose(self) -> ComposeResult:
        yield Static(self._text(), id="sync-text", markup=False)

    def can_want(self) -> bool:
        """A panel without a feed asks for nothing."""
        return self.feed is not None

    def shown_changed(self, on: bool) -> None:
        """The tab came on screen or left it: the frames carry the sync parts or not."""
        assert self.feed is not None
        for key in PARTS:
            self.feed.want_part(key, on)

    def set_device(self, name: str | None) -> None:
        """The selected device changed."""
        self.device = name
        self._redraw()

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its syncs and commits (while the tab is shown)."""
        if self.sampling:
            self.show_frame(shown.frame, recorded=shown.recorded)

    def show_frame(self, frame: Frame | None, recorded: bool = False) -> None:
        """Show ``frame``'s syncs and commits (``recorded``: from the history or a replay)."""
        self._frame = frame
        self._recorded = recorded
        self._redraw()

    def _text(self) -> str:
        return "\n".join(sync_lines(self._frame, self.device, self._recorded))

    def _redraw(self) -> None:
        if self.is_mounted:
            self.query_one("#sync-text", Static).update(self._text())
