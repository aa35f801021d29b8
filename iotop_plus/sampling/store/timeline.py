"""A :class:`Timeline`: frames that can be looked up by time (history and replay).

The TUI scrubs through a timeline. Its in-memory ring of recent frames is one; a recording
(``iotop_plus.record``) is another. Both answer the same questions, so the views never know
which one they are showing.

Times are wall-clock seconds since the epoch (UTC), as :attr:`Frame.wall_time`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame


class Timeline(Protocol):
    """Frames by time. Each frame's rates cover the interval since the frame before it."""

    def span(self) -> tuple[float, float] | None:
        """Wall times of the first and last frame, or None while empty."""
        ...

    def frame_at(self, wall: float) -> Frame | None:
        """The frame at ``wall`` or the last one before it (the first if ``wall`` is earlier)."""
        ...

    def step(self, wall: float, n: int) -> Frame | None:
        """The frame ``n`` samples after (``n > 0``) or before (``n < 0``) the one at ``wall``.

        Clamped to the ends; None while empty.
        """
        ...

    def window(self, end: float, seconds: float) -> list[Frame]:
        """Frames with ``end - seconds < wall_time <= end``, oldest first (for the charts)."""
        ...
