"""Strips that no longer keep themselves in their own caches, so they die when dropped.

Textual's :class:`~textual.strip.Strip` caches its results, and two of those results can be
the strip itself: ``divide`` at the strip's full length gives ``[self]``, and ``crop_extend``
from 0 to its length gives ``self``. Cached, each is a reference cycle (strip, cache, entry,
strip), so a strip that went through it is not freed when the widget that painted it drops it:
it waits for the cyclic collector. The compositor divides every line it paints at its cuts,
and a line that spans its widget's region is cut at its full length, so nearly every line the
TUI painted became garbage for the collector.

In the live TUI at 8 devices that was ~37 strips a second (charts, header, table rows), each
with its 7 caches and its segments: ~650 objects a second, every gen1 collection freeing
~4,500 of them at ~1.7 ms, and each full collection more.

:func:`install` makes those two calls give the same results without caching them; every other
call goes to Textual's own method. With the engine off it puts Textual's own methods back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.strip import Strip

from iotop_plus.tui import engine

_DIVIDE = Strip.divide
_CROP_EXTEND = Strip.crop_extend


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    length = self.cell_length
    kept = [cut for cut in cuts if cut <= length]
    if kept == [length]:
        return [self]  # as Textual's, without the cache entry that holds the strip
    return _DIVIDE(self, kept)


def _crop_extend(self: Strip, start: int, end: int, style: object) -> Strip:
    if start == 0 and end == self.cell_length:
        return self  # as Textual's, without the cache entry that holds the strip
    return _CROP_EXTEND(self, start, end, style)  # type: ignore[arg-type]


def fits() -> bool:
    """Whether Textual's Strip has the caches this works around (a newer Textual may not)."""
    return all(name in Strip.__slots__ for name in ("_divide_cache", "_crop_extend_cache"))


def install() -> None:
    """Patch :class:`~textual.strip.Strip` while the engine is on and it fits; with the
    engine off, leave (or put back) Textual's own methods. Each app calls it as it starts."""
    if engine.active() and fits():
        Strip.divide = _divide  # type: ignore[method-assign]
        Strip.crop_extend = _crop_extend  # type: ignore[method-assign]
    else:
        Strip.divide = _DIVIDE  # type: ignore[method-assign]
        Strip.crop_extend = _CROP_EXTEND  # type: ignore[method-assign]
