"""Looking up a frame in an encoded chunk of the frame store: the chunk's stream decoded
(:func:`decode`) and its frames rebuilt from it
(:func:`~iotop_plus.record.recorded_frame.recorded_frame`), with the last sample of the chunk
before (:func:`last_of` while that one is not encoded) for the first frame's rates.

Loaded with the store's first look-up of an encoded chunk, not with the store: the TUI's
first figures wait for no decoding module (docs/performance.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import MappingProxyType

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.collect import recorded_sample
from iotop_plus.record.recorded_frame import recorded_frame
from iotop_plus.record.store_chunk import Chunk
from iotop_plus.record.stream import decode_stream
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import Frame


def decode(chunk: Chunk) -> list[RecordedSample]:
    """The chunk's samples, decoded from its pieces, with the identities they came with."""
    assert chunk.pieces is not None
    samples = decode_stream(chunk.pieces, "frame store", _no_warning)
    identities = MappingProxyType(dict(chunk.identities))
    return [
        dataclasses.replace(rs, sample=dataclasses.replace(rs.sample, identities=identities))
        for rs in samples
    ]


def last_of(frames: list[Frame], roots: Roots, top_processes: int) -> RecordedSample | None:
    """The last of a chunk's ``frames`` (it is not encoded yet) as the recorder has it."""
    return recorded_sample(frames[-1], roots, top_processes) if frames else None


def _no_warning(_line: str) -> None:
    """A chunk the store wrote itself decodes whole; a bound hit would be a bug, not input."""


class Decoded:
    """A chunk's samples (as far as they went when it was decoded) and the frames rebuilt
    from them so far."""

    def __init__(
        self,
        chunk: Chunk,
        samples: list[RecordedSample],
        before: Callable[[], RecordedSample | None],
    ) -> None:
        self.chunk = chunk
        self.samples = samples
        self.before = before
        """The last sample of the chunk before, when its rates reach into this one."""
        self.size = len(chunk)
        """The chunk's frames when it was decoded (an open chunk grows after)."""
        self.rests = chunk.rests()
        """Each frame's :data:`~iotop_plus.record.store_chunk.UNRECORDED` values."""
        self._frames: dict[int, Frame] = {}

    def frame(self, i: int) -> Frame | None:
        """The chunk's frame ``i`` (None when the chunk decoded to fewer samples)."""
        got = self._frames.get(i)
        if got is not None:
            return got
        if i >= len(self.samples):
            return None
        chunk = self.chunk
        before = self.samples[i - 1] if i > 0 else self.before()
        got = recorded_frame(
            self.samples[i],
            before,
            chunk.inventory,
            chunk.nr_requests,
            changed=chunk.changed and i == 0,
            seq=chunk.seqs[i],
            chunk=self.samples,
            index=i,
        )
        if got.sample.wall_time != chunk.walls[i]:  # (a recording keeps whole nanoseconds)
            got = dataclasses.replace(
                got, sample=dataclasses.replace(got.sample, wall_time=chunk.walls[i])
            )
        rest = self.rests[i] if i < len(self.rests) else None
        if rest:
            got = dataclasses.replace(got, **rest)
        self._frames[i] = got
        return got
