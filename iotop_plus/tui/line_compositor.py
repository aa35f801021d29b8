"""A compositor that renders only the lines a partial update sends (#25).

Textual's partial update takes the rectangle that encloses every changed region and asks
each widget overlapping it for *all* its lines, then keeps only the changed ones. On the
default screen the header, the table, the charts and the Device tab change every frame, so
the rectangle is the whole screen and every widget rendered every line (~380 lines for ~40
changed), which was most of the TUI's CPU.

Here each widget overlapping a changed line renders only the band from its first to its last
changed line. Every changed line is still rendered whole, by every widget on it, exactly as
Textual renders it; lines outside the changed ones were thrown away before. Full renders
(resize, layout, a new screen) are Textual's own.

It relies on Textual's private ``Compositor._get_renders`` and ``render_partial_update``
(Textual 8). :func:`line_compositor` returns ``None`` when they are not what this expects,
and the screen keeps Textual's compositor.
"""

from __future__ import annotations

import inspect
from bisect import bisect_left
from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


class LineCompositor(Compositor):
    """:class:`Compositor` whose partial updates render only the changed lines' bands."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: list[int] | None = None
        """The changed lines of the partial update being rendered (sorted), else None."""

    def render_partial_update(self) -> ChopsUpdate | None:
        spans = list(self._regions_to_spans(self._dirty_regions))
        self._lines = sorted({y for y, _, _ in spans})
        try:
            return super().render_partial_update()
        finally:
            self._lines = None

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        lines = self._lines
        if lines is None or crop is None:
            yield from super()._get_renders(crop)
            return
        overlaps = crop.overlaps
        for widget, (region, clip) in self.visible_widgets.items():
            if not overlaps(clip):
                continue
            shown = region.intersection(clip)
            first = bisect_left(lines, shown.y)
            end = bisect_left(lines, shown.bottom)
            if first == end or not shown.width:
                continue  # no changed line crosses this widget
            top, bottom = lines[first], lines[end - 1] + 1
            band = Region(shown.x, top, shown.width, bottom - top)
            yield (
                region,
                band,
                widget.render_lines(
                    Region(band.x - region.x, band.y - region.y, band.width, band.height)
                ),
            )


def line_compositor() -> Compositor | None:
    """A :class:`LineCompositor`, or None when this Textual's compositor is not the one it
    was written for (the caller keeps Textual's own)."""
    try:
        partial = inspect.signature(Compositor.render_partial_update)
        renders = inspect.signature(Compositor._get_renders)
    except (AttributeError, TypeError, ValueError):
        return None
    if list(partial.parameters) != ["self"] or list(renders.parameters) != ["self", "crop"]:
        return None
    if not hasattr(Compositor, "_regions_to_spans"):
        return None
    return LineCompositor()
