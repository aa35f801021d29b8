"""How many bytes a container keeps for what is added to it, measured with tracemalloc."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def bytes_kept(add: Callable[[T], object], items: Iterable[T]) -> int:
    """The bytes still allocated after ``add(item)`` for each of ``items``, each item dying once
    added (as in the TUI), after a garbage collection before and after."""

    def add_all() -> None:  # the last item dies with this frame
        for item in items:
            add(item)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        add_all()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
