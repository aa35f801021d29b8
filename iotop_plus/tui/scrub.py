"""Scrubbing: which frame is on screen when it is not the live one.

:class:`Scrubber` moves the position of the shown frame (:class:`~iotop_plus.tui.shown.Shown`,
the main screen's one reactive) through a timeline: it sets the shown frame to the frame
found, in mode HISTORY (or REPLAY), and every view reads it from there. The charts' window
ends at the same position: one path, on wall time, live, paused, scrubbed or replayed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo
from typing import Protocol

from textual.message import Message

from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.timeline import (
    Charted,
    Columns,
    Mark,
    Timeline,
    event_marks,
    frame_columns,
)
from iotop_plus.text import TimeParseError, clock_text, parse_time, zone_label
from iotop_plus.tui.messages import Notifies
from iotop_plus.tui.replay_reads import ReplayReads
from iotop_plus.tui.shown import HISTORY, LIVE, REPLAY, Shown


class ScrubView(Notifies, Protocol):
    """Where the shown frame is kept (the main screen)."""

    shown: Shown
    """The frame on screen, its mode and position."""

    def go_live(self) -> None:
        """Show the newest live frame, and each one after it."""

    def post_message(self, message: Message) -> bool:
        """Queue ``message`` for the screen (from any thread)."""


class Scrubber:
    """The position in a timeline, and the moves ``[ ] { } g l`` make.

    Args:
        view: The screen that keeps the shown frame.
        timeline: Where frames are looked up: the app's ring, or a recording.
        replay: Frames come only from ``timeline`` (no live sampling).
        zone: The recorded host's zone (None: the viewer's own).

    In a replay whose timeline says its reads can be slow (``slow_reads``: a recording,
    decoded chunk by chunk), every move looks its frame up on a worker thread
    (:class:`~iotop_plus.tui.replay_reads.ReplayReads`), with the charts' window, and shows
    it when it arrives; keys are answered meanwhile and a newer move supersedes it.
    """

    def __init__(
        self,
        view: ScrubView,
        timeline: Timeline,
        *,
        replay: bool = False,
        zone: tzinfo | None = None,
    ) -> None:
        self.view = view
        self.timeline = timeline
        """Frames by time."""
        self.replay = replay
        """Frames come from a recording, not from this host now."""
        self.zone = zone
        """The zone times are typed and shown in."""
        self.moves = 0
        """Scrub moves made (tests read it)."""
        self.reads: ReplayReads | None = None
        """Where a replay's lookups run when the timeline's reads can be slow, else None."""
        if replay and getattr(timeline, "slow_reads", False):
            self.reads = ReplayReads(view.post_message, self._warn)
        self.window_s: float | None = None
        """The charts' window, seconds (known from their first draw)."""
        self._window: tuple[float, float, list[Frame]] | None = None
        """The window read with the frame shown: (end, seconds, frames)."""
        self._stepping: tuple[float, int] | None = None
        """The step in flight: from where, how many samples (steps add up meanwhile)."""

    @property
    def at(self) -> float | None:
        """Wall time of the frame shown when scrubbed; None when live or paused."""
        return self.view.shown.at

    @property
    def mode(self) -> str:
        """``live``, ``paused``, ``history`` or ``replay``."""
        return self.view.shown.mode

    @property
    def scrubbed(self) -> bool:
        """Whether a frame of the timeline, not the live one, is on screen."""
        return self.at is not None

    def origin(self) -> float | None:
        """Wall time of the frame shown (live: the newest), or None before any frame."""
        return self._origin()

    def _origin(self) -> float | None:
        shown = self.view.shown
        if shown.at is not None:
            return shown.at
        if shown.frame is not None:
            return shown.frame.wall_time
        span = self.timeline.span()
        return span[1] if span else None

    # ---- moves ---------------------------------------------------------------------------

    def start(self, at: float | None) -> Frame | None:
        """A replay opens: show the frame at ``at`` (wall time), or the first one."""
        span = self.timeline.span()
        if span is None:
            return self._nothing()
        wall = span[0] if at is None else at
        return self._look(lambda: self.timeline.frame_at(wall))

    def step(self, n: int) -> Frame | None:
        """Show the frame ``n`` samples later (or earlier, ``n < 0``)."""
        origin = self._origin()
        if origin is None:
            return self._nothing()
        if self._stepping is not None and self.reads is not None and self.reads.in_flight:
            origin, n = self._stepping[0], self._stepping[1] + n
        stepping = (origin, n)
        frame = self._look(lambda: self.timeline.step(stepping[0], stepping[1]))
        self._stepping = stepping if self.reads is not None else None
        return frame

    def seek(self, seconds: float) -> Frame | None:
        """Show the frame ``seconds`` later (or earlier); at least one sample moves."""
        origin = self._origin()
        if origin is None:
            return self._nothing()

        def lookup() -> Frame | None:
            frame = self.timeline.frame_at(origin + seconds)
            if frame is not None and frame.wall_time == origin:  # a gap in the recording
                frame = self.timeline.step(origin, 1 if seconds > 0 else -1)
            return frame

        return self._look(lookup)

    def _look(self, lookup: Callable[[], Frame | None]) -> Frame | None:
        """Show what ``lookup`` finds: now, or (:attr:`reads`) when a worker has read it,
        with the charts' window ending there. Returns the frame shown now, if any."""
        self._stepping = None
        if self.reads is None:
            return self.show(lookup())
        timeline, seconds = self.timeline, self.window_s

        def read() -> tuple[Frame | None, list[Frame] | None]:
            frame = lookup()
            if frame is None or seconds is None:
                return frame, None
            return frame, timeline.window(frame.wall_time, seconds)

        def arrived(found: tuple[Frame | None, list[Frame] | None]) -> None:
            frame, window = found
            self._stepping = None
            if frame is not None and window is not None and seconds is not None:
                self._window = (frame.wall_time, seconds, window)
            self.show(frame)

        self.reads.submit(read, arrived)
        return None

    def _warn(self, line: str) -> None:
        self.view.notify(line, severity="warning", timeout=5, markup=False)

    def jump(self, text: str) -> str | None:
        """Show the frame at the time ``text`` names; returns a one-line error, or None."""
        span = self.timeline.span()
        if span is None:
            return "no history yet"
        try:
            wall = parse_time(text, span[1], self.zone)
        except TimeParseError as exc:
            return str(exc)
        frame = self._look(lambda: self.timeline.frame_at(wall))
        span = self.timeline.span() or span  # it may reach further back now (recordings)
        if wall < span[0]:
            self.view.notify(
                f"history starts at {self.clock(span[0])}: showing its first frame",
                severity="warning",
                timeout=5,
                markup=False,
            )
        elif frame is not None and wall > span[1] and not self.replay:
            self.view.notify("that is after the newest frame: showing it", timeout=4)
        return None

    def live(self) -> None:
        """Back to live (in a replay: to the newest frame of the recording)."""
        if self.replay:
            span = self.timeline.span()
            if span is not None:
                newest = span[1]
                self._look(lambda: self.timeline.frame_at(newest))
            return
        self.view.go_live()

    def show(self, frame: Frame | None) -> Frame | None:
        """Put ``frame`` on screen as the scrubbed position (None: nothing to show)."""
        if frame is None:
            return self._nothing()
        self.moves += 1
        # Live frames keep filling the ring, not the screen.
        self.view.shown = Shown(frame, REPLAY if self.replay else HISTORY, frame.wall_time)
        return frame

    def _nothing(self) -> Frame | None:
        self.view.notify("no history yet", timeout=3)
        return None

    def jump_hint(self) -> str | None:
        """What the jump dialog says is kept (and in which zone); None, and "no history yet"
        said, when nothing is."""
        span = self.timeline.span()
        if span is None:
            self.view.notify("no history yet", timeout=3)
            return None
        zone = zone_label(self.zone, span[1])
        hint = f"kept: {self.clock(span[0])} to {self.clock(span[1])}"
        return hint + (f" ({zone}; times without an offset are in it)" if zone else "")

    @property
    def away_from_live(self) -> bool:
        """Whether ``l`` has somewhere to go back from (history, a replay, a pause)."""
        return self.mode != LIVE

    def clock(self, wall: float) -> str:
        """``14:05:03`` in the zone shown (with the date when not today's)."""
        span = self.timeline.span()
        return clock_text(wall, self.zone, span[1] if span else None)

    # ---- what the charts draw -------------------------------------------------------------

    def chart_window(self, device: str | None, seconds: float) -> tuple[Columns | None, list[Mark]]:
        """The selected device's figures and the marks over the ``seconds`` ending at the frame
        shown (wall times, live or not): from the store's columns, or, for a timeline that keeps
        none (a replay, read on a worker with the frame), from the window of frames."""
        end = self.origin()
        if end is None or device is None:
            return None, []
        self.window_s = seconds
        timeline = self.timeline
        if isinstance(timeline, Charted) and self.reads is None:
            return timeline.chart(device, end - seconds, end)
        kept = self._window
        if kept is not None and kept[0] == end and kept[1] == seconds:
            frames = kept[2]  # read on the worker with the frame
        else:
            frames = timeline.window(end, seconds)
        return frame_columns(frames, device), list(event_marks(frames))
