"""Bytes the history ring keeps for minutes live in blocks mapped apart from the heap (#25)."""

from __future__ import annotations

import gc
import mmap
import weakref

from iotop_plus.sampling.byte_blocks import ByteBlocks
from iotop_plus.sampling.ring_timeline import RingTimeline, fill
from tests.unit.test_ring_timeline import canned_frames


def test_bytes_kept_read_back_and_a_full_block_starts_another() -> None:
    blocks = ByteBlocks(block_size=64)
    first, at = blocks.keep(b"0123456789")
    assert isinstance(first, mmap.mmap) and first[at : at + 10] == b"0123456789"
    second, at2 = blocks.keep(b"abcdef")
    assert second is first and at2 == at + 10 and second[at2 : at2 + 6] == b"abcdef"
    for _ in range(3):
        blocks.keep(b"x" * 15)
    third, at3 = blocks.keep(b"y" * 15)  # 76 bytes would not fit: a new block
    assert third is not first and third[at3 : at3 + 15] == b"y" * 15
    big = b"z" * 17  # over a quarter block: kept as it is
    assert blocks.keep(big) == (big, 0)


def test_the_rings_frames_keep_their_bytes_in_blocks_unmapped_when_dropped() -> None:
    frames = canned_frames(400)
    ring = fill(RingTimeline(minutes=1, interval=1.0), frames[:61])
    ring._packer._blocks.block_size = 4096  # a few frames a block
    fill(ring, frames[61:120])
    early = {id(p._block): weakref.ref(p._block) for p in list(ring._frames)[-59:]}
    assert all(isinstance(ref(), mmap.mmap) for ref in early.values())
    assert len(early) > 2
    fill(ring, frames[120:])  # those frames leave the window, and their blocks go
    gc.collect()
    assert [ref() for ref in early.values()] == [None] * len(early)
    assert ring.frames() == frames[-61:]
    blocks = {id(p._block) for p in ring._frames}
    assert len(blocks) < len(ring._frames) / 2
