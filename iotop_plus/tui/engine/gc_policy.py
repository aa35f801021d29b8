"""The garbage collector's and the C heap's policy once the main screen is up.

- The console script holds the collector off through the start (``iotop_plus/cli.py``): the
  imports and the first screen made ~110 collections, ~50 ms before the first figures, and
  leave ~1,500 garbage objects. Once the parts are up it is on again and collects them, once.
- The start's objects (the app, its screens, widgets, styles, modules' tables: ~70,000 of
  them) are never garbage: a full collection scanned them all, ~25 ms of the main thread once
  a minute, ~6 % of its time at 1 s. They move to the collector's permanent generation
  (``gc.freeze``).
- With the engine on, the default screen's frames make no garbage cycles (painted lines were
  the last, :mod:`.strip_cycles`), so the young collections found nothing: ~1.5 a second,
  0.2 ms each, at Python's 700. They run at :data:`GEN0_THRESHOLD`. On stock Textual every
  painted line is a cycle, and the threshold stays Python's.
- Heap pages go back to the kernel once a minute, with glibc's ``malloc_trim``. Once the
  frame store is full, every minute frees the chunk that left the window and allocates the
  new one, of another size. The objects Python holds stay level, but the C heap's free
  space is left in pieces between live blocks, and glibc gives back only what lies at the top
  of a heap: the resident size crept up by ~1.5 KB a second over a 40-minute soak while
  tracemalloc saw the traced memory fall. ``malloc_trim(0)`` releases the free pages anywhere
  in the heaps (``madvise``), and costs about a millisecond.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any, Protocol

from textual.timer import Timer

from iotop_plus.tui import engine

GEN0_THRESHOLD = 10_000
"""Container objects made (less those freed) between young collections once the parts are up,
with the engine on (Python's default is 700). At 8 devices a frame leaves a few hundred behind:
a collection every ~40 s, against ~1.5 a second; cycles made by rarer work wait that long at
most."""

TRIM_EVERY_S = 60.0
"""Seconds between two trims."""


def heap_trimmer() -> Callable[[], object] | None:
    """A call of the C library's ``malloc_trim(0)``, or None where it has none (musl, not
    Linux): the heap then stays as the allocator keeps it."""
    import ctypes  # (after the first paint: ctypes is not on the start's path)

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


class Ticking(Protocol):
    """Anything that runs a callback on an interval: a screen or a widget."""

    def set_interval(
        self, interval: float, callback: Callable[[], Any], *, name: str | None = None
    ) -> Timer: ...


def settle(node: Ticking) -> Timer | None:
    """The policy, once the screen's parts are up: the collector on (held off through the
    start) and the start's garbage collected, freeze what the start made, collect the young
    generation less often while the engine is on, and trim the heap once a minute on
    ``node``'s timer, which is returned (None where there is no ``malloc_trim``)."""
    gc.enable()
    gc.collect()  # (else the start's garbage would be frozen with the rest, for ever)
    gc.freeze()
    if engine.active():
        gc.set_threshold(GEN0_THRESHOLD, *gc.get_threshold()[1:])
    trim = heap_trimmer()
    if trim is None:
        return None
    return node.set_interval(TRIM_EVERY_S, trim, name="heap-trim")
