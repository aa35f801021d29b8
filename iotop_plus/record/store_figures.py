"""A closed chunk's chart figures, packed: the frame store's biggest part once its frames are
encoded (float32, nine a device a frame: 2.2 KB a frame at 60 devices, 7.8 MB of a 15-minute
ring at 0.25 s).

While a chunk is open its figures are one frame's after another (appending a frame writes one
run). Once it is encoded they are packed per device: the device's figures metric after metric,
their bytes split into four planes (a float's sign and exponent bytes, alike from one frame to
the next, deflate well apart from its mantissa's), deflated on the store's encoding thread.
A chart reads one device: the chunk's stream is inflated as far as that device's block (at
most ~90 KB at 60 devices and 42 frames) when it is first read, and the chunk keeps the
blocks of the last two devices read. Only chunks of :data:`PACKED_FROM` frames or more are
packed. An idle device's figures pack to almost nothing; busy
ones to ~60-70 %.
"""

from __future__ import annotations

import zlib
from array import array

WBITS = -15
"""Raw deflate (no header: the store's own bytes)."""
PACKED_FROM = 16
"""Frames a chunk holds at least for its figures to be packed. A chart that reads a device
inflates each chunk of its window as far as that device: a large host's chunks are a few
frames of many devices (2 at 2,000), whose figures stay as they came (a window's 43 MB to
inflate at a switch to the last of 2,000 devices, and a chunk each half second)."""


class PackedFigures:
    """A chunk's figures, packed: one deflate stream of the devices' blocks, one after
    another (one stream a chunk costs half the time of one a device, or of one flushed after
    each device: deflate's start and flush are most of a small block's)."""

    __slots__ = ("blob", "block")

    def __init__(self, figures: array[float], devices: int, width: int) -> None:
        stride = devices * width
        deflate = zlib.compressobj(1, zlib.DEFLATED, WBITS)
        out: list[bytes] = []
        for d in range(devices):
            block: array[float] = array("f")
            for metric in range(width):
                block.extend(figures[d * width + metric :: stride])
            raw = block.tobytes()
            out.append(deflate.compress(raw[0::4] + raw[1::4] + raw[2::4] + raw[3::4]))
        out.append(deflate.flush())
        self.blob = b"".join(out)
        """The deflated blocks, one device after another."""
        self.block = len(figures) // devices * 4
        """The bytes of one device's block."""

    def nbytes(self) -> int:
        """The bytes held."""
        return len(self.blob)

    def device(self, position: int) -> array[float]:
        """The block of the device at ``position``: its first metric over the chunk's
        frames, then the next (the stream inflated as far as its end)."""
        size = self.block
        end = (position + 1) * size
        planes = zlib.decompressobj(WBITS).decompress(self.blob, end)[end - size : end]
        n = size // 4
        raw = bytearray(size)
        for k in range(4):
            raw[k::4] = planes[k * n : (k + 1) * n]
        out: array[float] = array("f")
        out.frombytes(raw)
        return out
