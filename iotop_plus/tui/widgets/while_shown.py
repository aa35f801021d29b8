"""Panels that ask the frames for their part only while they are on screen.

A side panel's part of the frame (processes, cgroups, blocked tasks) costs a read each frame:
it is wanted from when the panel shows until it hides. Textual's ``Show`` can be lost (a
scroll-only refresh between a display change and its layout leaves the widget in the
compositor's map, so the layout sees nothing new): every layout refresh checks again.
"""

from __future__ import annotations

from typing import Any

from textual.widget import Widget


class WhileShown(Widget):
    """A widget told (:meth:`shown_changed`) when it comes on screen and when it leaves."""

    _shown_wanted = False

    def on_mount(self) -> None:
        self.screen.screen_layout_refresh_signal.subscribe(self, self._check_shown)

    def _check_shown(self, screen: Any) -> None:
        node: Any = self
        while node is not None and node is not screen:
            if not node.display:
                self._want(False)
                return
            node = node.parent
        self._want(node is screen)

    def on_show(self) -> None:
        self._want(True)

    def on_hide(self) -> None:
        self._want(False)

    def on_unmount(self) -> None:
        self._want(False)

    @property
    def sampling(self) -> bool:
        """True while the panel asks the feed for its part of the frames (it is shown)."""
        return self._shown_wanted

    def _want(self, on: bool) -> None:
        if on == self._shown_wanted or not self.can_want():
            return
        self._shown_wanted = on
        self.shown_changed(on)

    def can_want(self) -> bool:
        """Whether there is a feed to ask (a panel without one shows nothing)."""
        return True

    def shown_changed(self, on: bool) -> None:
        """The panel came on screen (``on``) or left it."""
        raise NotImplementedError
