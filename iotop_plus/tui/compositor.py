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
        areas = [(x, y, x + w, y + h) for x, y, w, h in dirty if w > 0 and h > 0]
        rendered: list[Corners] = []
        for widget, (region, clip) in self.visible_widgets.items():
            rows = rows_to_render(region, clip, areas, rendered)
            if rows is None:
                continue
            rendered.append(rows)
            x, top, right, bottom = rows
            crop = Region(x - region.x, top - region.y, right - x, bottom - top)
            yield region, Region(x, top, right - x, bottom - top), widget.render_lines(crop)


Corners = tuple[int, int, int, int]
"""A region as (left, top, right, bottom), right and bottom exclusive."""


def rows_to_render(
    region: Region, clip: Region, dirty: list[Corners], rendered: list[Corners]
) -> Corners | None:
    """The part of ``region`` shown within ``clip``, cut to the rows from the first to the
    last that overlaps one of ``dirty`` (non-empty areas); None when it overlaps none, or
    when each of its dirty parts lies inside one of ``rendered``.

    Plain integers: with Textual's ``Region`` methods (each an ``lru_cache`` lookup on a
    pair of tuples), this bookkeeping took twice as long, and a frame's paint 0.86 ms
    in-process against 0.68 now (``benchmarks/bench_frame_cost.py``) (#25)."""
    x, y, w, h = region
    cx, cy, cw, ch = clip
    left, top, right, bottom = max(x, cx), max(y, cy), min(x + w, cx + cw), min(y + h, cy + ch)
    if right <= left or bottom <= top:
        return None
    first, last = bottom, top  # no dirty row yet
    covered = True
    for ax, ay, ax2, ay2 in dirty:
        if ax >= right or ax2 <= left or ay >= bottom or ay2 <= top:
            continue
        px, py, px2, py2 = max(ax, left), max(ay, top), min(ax2, right), min(ay2, bottom)
        first, last = min(first, py), max(last, py2)
        if covered:
            for rx, ry, rx2, ry2 in rendered:
                if rx <= px and px2 <= rx2 and ry <= py and py2 <= ry2:
                    break
            else:
                covered = False
    if last == top or covered:
        return None
    return left, first, right, last
