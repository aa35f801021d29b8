"""A compositor that renders only the widgets a partial update touches (#25).

Textual's :class:`~textual._compositor.Compositor` paints a partial update by rendering every
widget that overlaps the one rectangle around all the dirty regions. The main screen's header
(row 0) and its charts (the bottom rows) change every frame, so that rectangle is the whole
screen, and every widget on it (the side panel's tabs, panes and containers too) renders all
its lines every second, even those that did not change: at 120x36 about 25 widgets at some
50 µs each.

Only the parts of the dirty regions are written to the terminal (``ChopsUpdate`` skips
everything outside its spans), and the part of a dirty region on any line belongs to a widget
whose region overlaps it. So a widget that overlaps no dirty region contributes nothing to the
update and need not render. This subclass leaves such widgets out; what it writes is the same.

Nor does a widget whose dirty parts all lie inside a widget in front of it that was rendered:
the compositor keeps, for each cut of a line, the first strip it gets, front to back, so what
the widget behind renders there is thrown away. The containers under the charts and the
screen itself rendered ~77 blank lines a frame that way, against ~20 lines of charts.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


class DirtyOnlyCompositor(Compositor):
    """Renders, for a partial update, only the widgets that overlap a dirty region."""

    @staticmethod
    def fits() -> bool:
        """Whether Textual's compositor has the private parts this one builds on (else the
        main screen keeps Textual's own: a newer Textual 8 may have changed them)."""
        stock = Compositor()
        return (
            isinstance(getattr(stock, "_dirty_regions", None), set)
            and isinstance(getattr(stock, "visible_widgets", None), dict)
            and list(inspect.signature(Compositor._get_renders).parameters) == ["self", "crop"]
        )

    def __init__(self) -> None:
        super().__init__()
        self._rendering: list[Region] | None = None
        """The dirty regions of the partial update being rendered, or None for a full one."""

    def render_partial_update(self) -> ChopsUpdate | None:
        """Render a partial update, keeping its dirty regions for :meth:`_get_renders`."""
        self._rendering = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._rendering = None

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        dirty = self._rendering
        if dirty is None:
            return super()._get_renders(crop)
        return self._renders_touching(dirty)

    def _renders_touching(
        self, dirty: list[Region]
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        """The renders of the widgets whose visible part overlaps one of ``dirty``, each cut to
        the rows from its first to its last dirty one: a chart with one changed line renders
        that line. Widgets come front to back; one whose dirty parts are all inside what a
        widget in front of it rendered is left out."""
        rendered: list[Region] = []
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            rows = _dirty_rows(shown, dirty)
            if rows is None or _covered(shown, dirty, rendered):
                continue
            rendered.append(rows)
            yield region, rows, widget.render_lines(rows.translate(-region.offset))


def _dirty_rows(shown: Region, dirty: list[Region]) -> Region | None:
    """The rows of ``shown`` from the first to the last that overlaps a region of ``dirty``."""
    top = bottom = None
    for area in dirty:
        if shown.overlaps(area):
            top = area.y if top is None else min(top, area.y)
            bottom = area.bottom if bottom is None else max(bottom, area.bottom)
    if top is None or bottom is None:
        return None
    top, bottom = max(top, shown.y), min(bottom, shown.bottom)
    return Region(shown.x, top, shown.width, bottom - top)


def _covered(shown: Region, dirty: list[Region], rendered: list[Region]) -> bool:
    """Whether each part of ``shown`` in a region of ``dirty`` lies inside one of
    ``rendered``."""
    for area in dirty:
        part = shown.intersection(area)
        if part.area and not any(r.contains_region(part) for r in rendered):
            return False
    return True
