"""The verdicts of a frame, each device's judged with the frames before it.

One path for every consumer of :func:`~iotop_plus.why.diagnosis.diagnose`:

- a source's frames in turn (the TUI's sampler thread, ``serve``'s sampler, ``snapshot``'s
  reports): a :class:`Judge` judges each frame with the :class:`~.lookback.LookbackFeed`
  of the ones it judged before, and attaches the verdicts to the frame
  (:attr:`~iotop_plus.sampling.frame.model.Frame.verdicts`, derived: never recorded);
- a frame looked up in a timeline (scrubbed back, a replay): :func:`timeline_lookback` is the
  frames before it there and each device's quiet awaits before it (the live judge's when it
  judged that frame, else the timeline's: :mod:`~.quiet_history`), and :func:`judge` judges
  it with them, off the UI thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.why.lookback import RECENT, Lookback, LookbackFeed

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import Frame
    from iotop_plus.sampling.store.timeline import Timeline
    from iotop_plus.why.diagnosis import Diagnosis
    from iotop_plus.why.quiet_history import QuietHistory


def judge(
    frame: Frame, lookback: Lookback, devices: Iterable[str] | None = None
) -> Mapping[str, Diagnosis]:
    """The verdict of each of ``devices`` (None: every device of ``frame``). The diagnosis
    modules load with the first device judged: the TUI's first figures need none."""
    names = frame.rates if devices is None else devices
    if not names:
        return MappingProxyType({})
    from iotop_plus.why.diagnosis import diagnose

    return MappingProxyType({name: diagnose(frame, name, lookback) for name in names})


def has_verdict(device: str, frame: Frame) -> bool:
    """Whether ``frame`` carries ``device``'s verdict."""
    return frame.verdicts is not None and device in frame.verdicts


def with_verdicts(frame: Frame, verdicts: Mapping[str, object]) -> Frame:
    """``frame`` carrying ``verdicts`` besides those it has."""
    if frame.verdicts:
        verdicts = MappingProxyType({**frame.verdicts, **verdicts})
    return dataclasses.replace(frame, verdicts=verdicts)


class Judge:
    """Judges the frames of one source in turn, each with the frames it judged before.

    Thread-safe as :class:`~.lookback.LookbackFeed` is; one thread judges (the sampler's).
    """

    def __init__(self, prior: Callable[[str], Sequence[float]] | None = None) -> None:
        """``prior``: each device's quiet awaits before the first frame (a recording's)."""
        self.lookback = LookbackFeed(prior=prior)
        """The frames judged so far: the recent ones and each device's quiet awaits."""

    def judged(
        self, frame: Frame, devices: Iterable[str] | None = None, seq: int | None = None
    ) -> Frame:
        """``frame`` with the verdicts of ``devices`` (None: all), judged with the frames
        before it; it is then one of them. ``seq``: its place in the sequence when not
        ``frame.seq`` (a caller that counts what it judges)."""
        verdicts = judge(frame, self.lookback.before(frame, seq), devices)
        self.lookback.add(frame, seq)
        return dataclasses.replace(frame, verdicts=verdicts)


def timeline_lookback(
    frame: Frame,
    timeline: Timeline | None,
    live: LookbackFeed | None = None,
    history: QuietHistory | None = None,
) -> Lookback:
    """What ``frame``'s verdict looks back on when it was looked up in ``timeline``: the
    :data:`~.lookback.RECENT` frames before it there, and the quiet awaits before it: the
    ``live`` feed's when it took ``frame``, else ``history``'s (the timeline's frames before
    it, :mod:`~.quiet_history`), else the quiet ones of those recent frames. Reads the
    timeline only (no verdict): the caller then judges, off the UI thread."""
    quiet: Callable[[str], Sequence[float]] | None = None
    if live is not None and live.saw(frame):
        quiet = live.quiet_before(frame.seq)
    elif history is not None:
        quiet = history.quiet_before(frame)
    return Lookback(recent_frames(frame, timeline), quiet)


def recent_frames(frame: Frame, timeline: Timeline | None) -> list[Frame]:
    """The :data:`~iotop_plus.why.lookback.RECENT` frames of ``timeline`` before
    ``frame``, oldest first: what the verdict looks back on (live: the TUI's ring; scrubbed
    back or replayed: the frames before the one shown)."""
    if timeline is None:
        return []
    step = frame.elapsed_s if frame.elapsed_s and frame.elapsed_s > 0 else 1.0
    oldest = frame.wall_time - (RECENT + 1.5) * step
    # Frame by frame back from the one shown, not a window of that many seconds: a frame
    # that came late (a stalled host, elapsed 2 s at -i 0.25) would make the window 13 s,
    # 50 frames rebuilt with their processes.
    earlier: list[Frame] = []
    at = timeline.frame_at(frame.wall_time)
    if at is not None and at.wall_time >= frame.wall_time:
        at = timeline.step(at.wall_time, -1)
    while at is not None and oldest < at.wall_time < frame.wall_time and len(earlier) < RECENT:
        earlier.append(at)
        before = timeline.step(at.wall_time, -1)
        at = before if before is not None and before.wall_time < at.wall_time else None
    return earlier[::-1]
