"""``RecordedSource``: a recording as a :class:`~iotop_plus.sampling.frame.FrameSource`.

``next_frame`` steps through the recording, one frame per call (headless use, tests). At the
end it raises :class:`EndOfRecording`, or, following a recorder, waits for the next sample.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from iotop_plus.record.timeline import RecordingTimeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import Frame
from iotop_plus.sampling.sampler import HostInfo


class EndOfRecording(Exception):
    """``next_frame`` was called after the last recorded frame."""


class RecordedSource:
    """Frames of a recording, in order, as a frame source.

    Args:
        timeline: The recording (see :func:`iotop_plus.record.timeline.open_timeline`).
        start: Wall time of the first frame (default: the recording's start).
        follow: At the end, wait for the recorder's next sample instead of raising.
        poll_s: How often to look for new samples when following.
    """

    def __init__(
        self,
        timeline: RecordingTimeline,
        *,
        start: float | None = None,
        follow: bool = False,
        poll_s: float = 0.5,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.timeline = timeline
        self.roots = Roots()
        """Unused by recorded frames; present for the protocol (views read facts from frames)."""
        self.follow = follow
        self.poll_s = poll_s
        self._sleep = sleep
        self._wall: float | None = start
        self._started = False

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        """The next recorded frame.

        Raises:
            EndOfRecording: past the last frame (and not following).
        """
        while True:
            frame = self._next()
            if frame is not None:
                return frame
            if not self.follow:
                raise EndOfRecording("the recording ends here")
            self._sleep(self.poll_s)
            self.timeline.refresh()

    def _next(self) -> Frame | None:
        span = self.timeline.span()
        if span is None:
            return None
        if not self._started:
            wall = span[0] if self._wall is None else self._wall
            frame = self.timeline.frame_at(wall)
            self._started = frame is not None
        else:
            assert self._wall is not None
            frame = self.timeline.step(self._wall, 1)
            if frame is not None and frame.wall_time <= self._wall:
                return None  # clamped at the end
        if frame is not None:
            self._wall = frame.wall_time
        return frame

    def want(self, part: str, on: bool) -> None:
        """Recorded frames carry what was recorded; nothing to ask for."""

    def host_info(self) -> HostInfo:
        """The recorded host's header facts."""
        return self.timeline.host_info()

    def close(self) -> None:
        """Close the recording's files."""
        self.timeline.close()
