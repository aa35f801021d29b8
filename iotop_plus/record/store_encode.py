"""Encoding the frame store's closed chunks: a recording's chunk codec, off the appending thread.

A chunk of the memory ring holds its frames as they were appended while it is open; once it
is closed, :class:`ChunkCoder` encodes them as the recorder writes a chunk
(:class:`~iotop_plus.record.chunks.ChunkEncoder`, with the processes named again and the
health part written, as a file's first chunk does) and the chunk drops the frames. Each chunk
is a stream of its own (a keyframe first), encoded in the order the chunks closed, on a
thread of its own: appending a frame costs only its chart figures, and the codec's work
(most of a frame's cost at scale) never holds the thread that draws. A chunk's disk records
start with the predictors the chunk before chose (a recording's chunk tries them all again
on its first records): on a large host a chunk is a few frames, and trying every predictor
on most of them cost twice the encoding.

Until its stream is ready a closed chunk answers lookups from its frames; the stream is set
before the frames are dropped, so a reader always finds one of the two. The frames' values a
recording does not hold are packed with the stream
(:mod:`~iotop_plus.record.store_values`), and the charts' figures per device
(:mod:`~iotop_plus.record.store_figures`).
"""

from __future__ import annotations

import queue
import threading
import time

from iotop_plus.record.chunks import ChunkEncoder, sample_layout
from iotop_plus.record.collect import recorded_sample
from iotop_plus.record.recorded_health import HealthParts
from iotop_plus.record.recorded_who import CommandLines, WhoParts
from iotop_plus.record.store_chunk import WIDTH, Chunk
from iotop_plus.record.store_figures import PACKED_FROM, PackedFigures
from iotop_plus.record.store_values import pack
from iotop_plus.roots import Roots


class ChunkCoder:
    """Encodes closed chunks in the order given, on a daemon thread (or at once).

    Args:
        roots: Where the frames' processes were read (for their recorded cgroups).
        top_processes: Processes kept per frame.
        background: Encode on a thread of its own; False encodes in :meth:`submit`.
    """

    def __init__(self, roots: Roots, top_processes: int, *, background: bool = True) -> None:
        self.roots = roots
        self.top_processes = top_processes
        self.background = background
        self.seconds = 0.0
        """CPU time spent encoding, on the thread that encoded."""
        self.frames = 0
        """Frames encoded."""
        self.failed: list[str] = []
        """One line per chunk that could not be encoded (it keeps its frames)."""
        self._encoder = ChunkEncoder(carry=True)
        """One encoder for every chunk: a chunk of a few frames (a large host's) starts with
        the predictors the one before chose, not by trying them all again."""
        self._queue: queue.Queue[Chunk] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, chunk: Chunk) -> None:
        """Encode ``chunk`` (closed) soon: its frames are dropped once its stream is set."""
        if not self.background:
            self.encode(chunk)
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="frame-store-encode", daemon=True
                )
                self._thread.start()
        self._queue.put(chunk)

    def wait(self) -> None:
        """Return once every chunk submitted is encoded."""
        self._queue.join()

    def _run(self) -> None:
        while True:
            chunk = self._queue.get()
            try:
                if not chunk.dropped:
                    self.encode(chunk)
            finally:
                self._queue.task_done()

    def encode(self, chunk: Chunk) -> None:
        """Encode ``chunk``'s frames into its stream pieces, then drop the frames."""
        frames = chunk.frames
        if frames is None or not frames:
            return
        t0 = time.thread_time()
        encoder = self._encoder
        who = WhoParts(CommandLines(), cgroups=True)
        health = HealthParts()
        pieces: list[bytes] = []
        try:
            first = None
            for i, frame in enumerate(frames):
                layout, cols, ns, minute = sample_layout(frame.sample)
                if first is None:
                    first = layout
                elif layout != first:  # one chunk is one layout: keep the frames instead
                    raise ValueError(f"the devices' layout changed at frame {frame.seq}")
                rs = recorded_sample(frame, self.roots, self.top_processes)
                rs = who.add(rs, frame, 0, i > 0)
                rs = health.add(rs, frame, 0, i > 0)
                _disk, piece, _extras, extras_piece = encoder.encode(rs, layout, cols, ns, minute)
                pieces.append(piece + extras_piece)
            rests, figures = chunk.unrecorded, chunk.figures
            # A short chunk (a big host's: 2 frames at 2,000 devices) keeps its values and
            # figures as they came: its frames share their parts' values with the chunks
            # beside it, which a packed copy of each would not (nor be worth its pickling).
            short = len(chunk) < PACKED_FROM
            packed = pack(rests) if rests is not None and not short else None
            devices = len(chunk.names)
            if figures is not None and devices and not short:
                packed_figures: PackedFigures | None = PackedFigures(figures, devices, WIDTH)
            else:
                packed_figures = None
        except Exception as exc:  # a chunk left decoded costs memory, never the frames
            self.failed.append(f"frame store: a chunk kept unencoded: {exc}"[:200])
            return
        finally:
            encoder.close()  # each chunk is a stream of its own, a keyframe first
        chunk.encoded(pieces, packed, packed_figures)
        self.seconds += time.thread_time() - t0
        self.frames += len(pieces)
