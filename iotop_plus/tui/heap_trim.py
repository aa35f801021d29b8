"""Heap pages given back to the kernel once a minute, with glibc's ``malloc_trim`` (#25).

Once the history ring is full, every frame frees the packed frame that left the window and
allocates the new one, of another size. The objects Python holds stay level, but the C heap's
free space is left in pieces between live blocks, and glibc gives back only what lies at the
top of a heap: the resident size crept up by ~1.5 KB a second over a 40-minute soak while
tracemalloc saw the traced memory fall. ``malloc_trim(0)`` releases the free pages anywhere
in the heaps (``madvise``), and costs about a millisecond.
"""

from __future__ import annotations

from collections.abc import Callable

TRIM_EVERY_S = 60.0
"""Seconds between two trims."""


def heap_trimmer() -> Callable[[], object] | None:
    """A call of the C library's ``malloc_trim(0)``, or None where it has none (musl, not
    Linux): the heap then stays as the allocator keeps it, as before."""
    import ctypes  # (after the first paint: ctypes is not on the start's path)

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)
