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

A strip also makes its seven caches only when one is first used: Textual's ``__init__`` made
them all for every strip (three quarters of its cost, and seven of the objects the collector
counts), while most strips painted, joined or cropped use one or none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.segment import Segment
from textual.cache import FIFOCache
from textual.strip import Strip

from iotop_plus.tui import engine

_DIVIDE = Strip.divide
_CROP_EXTEND = Strip.crop_extend
_INIT = Strip.__init__
_PLAIN = ("_segments", "_cell_length", "_render_cache", "_link_ids", "_cell_count")
"""What Textual's ``__init__`` sets besides the caches."""


def _cache_sizes() -> dict[str, int]:
    """Each cache Textual's ``__init__`` makes, with its size."""
    probe = Strip.__new__(Strip)
    _INIT(probe, [])
    caches = {name: getattr(probe, name, None) for name in Strip.__slots__}
    return {n: c._maxsize for n, c in caches.items() if isinstance(c, FIFOCache)}


_SIZES = _cache_sizes()


def _lazy_init(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    self._segments = list(segments)
    self._cell_length = cell_length
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


def _cache_on_use(self: Strip, name: str) -> FIFOCache[object, object]:
    """A cache of the strip's, made now (Python asks for it here while it is not set)."""
    size = _SIZES.get(name)
    if size is None:
        raise AttributeError(f"'Strip' object has no attribute {name!r}")
    cache: FIFOCache[object, object] = FIFOCache(size)
    setattr(self, name, cache)
    return cache


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
    """Whether Textual's Strip has the caches this works around (a newer Textual may not),
    and its ``__init__`` sets caches and :data:`_PLAIN` only."""
    return all(name in _SIZES for name in ("_divide_cache", "_crop_extend_cache")) and set(
        Strip.__slots__
    ) == set(_SIZES) | set(_PLAIN)


def install() -> None:
    """Patch :class:`~textual.strip.Strip` while the engine is on and it fits; with the
    engine off, leave (or put back) Textual's own methods. Each app calls it as it starts."""
    if engine.active() and fits():
        Strip.divide = _divide  # type: ignore[method-assign]
        Strip.crop_extend = _crop_extend  # type: ignore[method-assign]
        Strip.__init__ = _lazy_init  # type: ignore[method-assign]
        Strip.__getattr__ = _cache_on_use  # type: ignore[attr-defined]
    else:
        Strip.divide = _DIVIDE  # type: ignore[method-assign]
        Strip.crop_extend = _CROP_EXTEND  # type: ignore[method-assign]
        Strip.__init__ = _INIT  # type: ignore[method-assign]
        # (``__getattr__`` stays: it serves only strips made while the engine was on, which
        # may outlive it in a process that switches, as the tests do.)
