"""A closed chunk's chart figures, packed: the frame store's biggest part once its frames are
encoded (float32, nine a device a frame: 2.2 KB a frame at 60 devices, 7.8 MB of a 15-minute
ring at 0.25 s).

While a chunk is open its figures are one frame's after another (appending a frame writes one
run). Once it is encoded they are packed per device: the device's figures metric after metric,
their bytes split into four planes (a float's sign and exponent bytes, alike from one frame to
the next, deflate well apart from its mantissa's), deflated on the store's encoding thread
(~40 us a frame at 60 devices). A chart reads one device: that device's block is inflated when
first read (~1.5 KB at 42 frames, a few us) and kept by the chunk until another device is read. An
idle device's figures pack to almost nothing; busy ones to ~40-60 %.
"""

from __future__ import annotations

import zlib
from array import array

WBITS = -12
"""Raw deflate with a 4 KB window: a device's block is 36 bytes a frame."""


class PackedFigures:
    """A chunk's figures packed per device: one deflate stream, flushed whole after each
    device's block, so that a block inflates alone (one stream a chunk costs half the
    time of one a device: deflate's start is most of a small block's)."""

    __slots__ = ("blob", "ends")

    def __init__(self, figures: array[float], devices: int, width: int) -> None:
        stride = devices * width
        deflate = zlib.compressobj(1, zlib.DEFLATED, WBITS)
        out: list[bytes] = []
        ends: array[int] = array("I")
        size = 0
        for d in range(devices):
            block: array[float] = array("f")
            for metric in range(width):
                block.extend(figures[d * width + metric :: stride])
            raw = block.tobytes()
            piece = deflate.compress(raw[0::4] + raw[1::4] + raw[2::4] + raw[3::4])
            piece += deflate.flush(zlib.Z_FULL_FLUSH)
            out.append(piece)
            size += len(piece)
            ends.append(size)
        self.blob = b"".join(out)
        """The deflated blocks, one device after another."""
        self.ends = ends
        """Where each device's block ends in :attr:`blob`."""

    def nbytes(self) -> int:
        """The bytes held."""
        return len(self.blob) + self.ends.itemsize * len(self.ends)

    def device(self, position: int) -> array[float]:
        """The block of the device at ``position``: its first metric over the chunk's
        frames, then the next."""
        start = self.ends[position - 1] if position else 0
        planes = zlib.decompressobj(WBITS).decompress(self.blob[start : self.ends[position]])
        n = len(planes) // 4
        raw = bytearray(len(planes))
        for k in range(4):
            raw[k::4] = planes[k * n : (k + 1) * n]
        out: array[float] = array("f")
        out.frombytes(raw)
        return out
