"""A compositor that renders only the widgets a partial update touches.

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

Both rest on Textual's paint order: ``visible_widgets`` front to back, and the first strip
given for a cut kept. :meth:`DirtyOnlyCompositor.fits` checks that order on a small map as well
as the shapes of the private parts; :func:`install` puts this compositor on a screen when the
engine is on and it fits, else the screen keeps Textual's own.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from functools import cache
from typing import Any

from rich.segment import Segment
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region, Size, Spacing
from textual.map_geometry import MapGeometry
from textual.screen import Screen
from textual.strip import Strip

from iotop_plus.tui import engine


class DirtyOnlyCompositor(Compositor):
    """Renders, for a partial update, only the widgets that overlap a dirty region."""

    @staticmethod
    @cache
    def fits() -> bool:
        """Whether Textual's compositor has the private parts this one builds on, and paints
        in the order its pruning relies on (:func:`paints_front_to_back`)."""
        stock = Compositor()
        return (
            isinstance(getattr(stock, "_dirty_regions", None), set)
            and isinstance(getattr(stock, "visible_widgets", None), dict)
            and list(inspect.signature(Compositor._get_renders).parameters) == ["self", "crop"]
            and paints_front_to_back()
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


def install(screen: Screen[Any]) -> None:
    """Give ``screen`` this compositor, when the engine is on and it fits (before the screen
    is first laid out); else it keeps Textual's own."""
    if engine.active() and DirtyOnlyCompositor.fits():
        screen._compositor = DirtyOnlyCompositor()


class _Probe(Compositor):
    """A compositor whose renders are given: one line, cut at 0 and 2."""

    def __init__(self, renders: list[tuple[Region, Region, list[Strip]]]) -> None:
        super().__init__()
        self.renders = renders

    def _get_renders(
        self,
        crop: Region | None = None,  # noqa: ARG002 (the renders are given whatever the crop)
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        return self.renders


def paints_front_to_back() -> bool:
    """Whether Textual lists the visible widgets front to back (the highest paint order
    first) and keeps, for each cut of a line, the first strip it is given: the two facts that
    let :class:`DirtyOnlyCompositor` leave out a widget hidden behind one it rendered."""
    try:
        back, front = object(), object()
        region = Region(0, 0, 2, 1)
        where = {
            widget: MapGeometry(
                region, ((0, 0, order),), region, Size(2, 1), Size(2, 1), region, Spacing()
            )
            for widget, order in ((back, 1), (front, 2))
        }
        ordered = Compositor()
        ordered.size = Size(2, 1)
        ordered._full_map = where  # type: ignore[assignment]  # (any hashable stands in)
        if list(ordered.visible_widgets) != [front, back]:
            return False
        first, second = Strip([Segment("ab")], 2), Strip([Segment("cd")], 2)
        probe = _Probe([(region, region, [first]), (region, region, [second])])
        probe.size = Size(2, 1)
        probe._cuts = [[0, 2]]
        chops = probe._render_chops(region, lambda _y: True)
        return len(chops) == 1 and chops[0].get(0) is first
    except Exception:  # (any change in those parts: not the order relied on)
        return False


Corners = tuple[int, int, int, int]
"""A region as (left, top, right, bottom), right and bottom exclusive."""


def rows_to_render(
    region: Region, clip: Region, dirty: list[Corners], rendered: list[Corners]
) -> Corners | None:
    """The part of ``region`` shown within ``clip``, cut to the rows from the first to the
    last that overlaps one of ``dirty`` (non-empty areas); None when it overlaps none, or
    when each of its dirty parts lies inside one of ``rendered``.

    Plain integers: with Textual's ``Region`` methods (each an ``lru_cache`` lookup on a
    pair of tuples), this bookkeeping took twice as long (``benchmarks/bench_frame_cost.py``)."""
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
