"""Bytes kept first in, first out, in blocks mapped apart from the heap.

The history ring keeps a frame's packed counters and parts (about 1 KB) for 15 minutes and
drops them in the order they came. Kept as ``bytes`` objects, they sat in glibc's heap among
the short-lived allocations of every frame, and once the ring was full the holes they left
grew the heap for another ring's length: +1.9 KB/s over 25 minutes with nothing more kept
(#25). Here they are copied into anonymous mappings of :data:`BLOCK` bytes, one after
another; a block is unmapped, whole, when the last thing kept in it is dropped.
"""

from __future__ import annotations

import mmap

BLOCK = 64 * 1024
"""Bytes of one block: a few dozen frames at 60 devices."""


Block = mmap.mmap | bytes
"""A block, or bytes too big for one, kept as they are."""


class ByteBlocks:
    """Appends bytes to the current block and says where; not thread-safe."""

    def __init__(self, block_size: int = BLOCK) -> None:
        self.block_size = block_size
        self._block: mmap.mmap | None = None
        self._at = 0

    def keep(self, data: bytes) -> tuple[Block, int]:
        """``data`` copied into a block: the block and where it starts there (``data`` itself
        and 0 when it is bigger than a quarter block). Slicing the block reads it back."""
        n = len(data)
        if n > self.block_size // 4:
            return data, 0
        if self._block is None or self._at + n > self.block_size:
            self._block = mmap.mmap(-1, self.block_size)
            self._at = 0
        start = self._at
        self._block[start : start + n] = data
        self._at = start + n
        return self._block, start
