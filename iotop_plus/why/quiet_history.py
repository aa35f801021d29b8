"""Each device's quiet awaits before a frame looked up in a timeline (scrubbed back, replayed).

The live :class:`~iotop_plus.why.verdicts.Judge` keeps each device's quiet awaits from every
frame it judged (:class:`~iotop_plus.why.lookback.LookbackFeed`), so a saturation that lasts
minutes is still judged against the quiet before it. A frame looked up in a timeline that the
judge never saw (a replay, history older than this run) gets the same from that timeline: the
quiet awaits of its frames in the :data:`QUIET_LOOKBACK_S` before the frame, the last
:data:`~iotop_plus.why.lookback.QUIET_KEEP` of them, as a judge running since then would keep.

Read off the UI thread, without rebuilding frames where the timeline allows it:

- a timeline that keeps each device's chart figures (the frame store, :class:`Charted`): from
  those columns;
- a recording (:class:`Sampled`, not aggregated): the device's rates worked out from each pair
  of raw counter samples; the stretch read is kept, so a scrub one frame back reads one sample;
- any other: its frames in the window.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from iotop_plus.sampling.disks.rates import compute_rates
from iotop_plus.sampling.store.timeline import Charted
from iotop_plus.why.lookback import QUIET_KEEP, quiet_await, quiet_figures

if TYPE_CHECKING:
    from iotop_plus.sampling.disks.sampler import Sample
    from iotop_plus.sampling.frame.model import Frame
    from iotop_plus.sampling.store.timeline import Columns, Timeline

QUIET_LOOKBACK_S = 15 * 60.0
"""How far before a looked-up frame its quiet baseline is read (the frame store's default
window)."""

_BEFORE = 1e-6
"""A hair before a time: the frame's own figures are not its baseline."""

Quiet = Callable[[str], Sequence[float]]
"""A device's quiet awaits before one frame, oldest first."""


class _HasSample(Protocol):
    @property
    def sample(self) -> Sample: ...


@runtime_checkable
class Sampled(Protocol):
    """A recording: its raw samples by time, each with the one before it (None: none)."""

    def samples(
        self, start: float, end: float
    ) -> Iterator[tuple[_HasSample, _HasSample | None]]: ...


def column_quiet(columns: Columns) -> list[float]:
    """The quiet awaits of a device's chart columns, oldest first."""
    f = columns.figures
    out = []
    for r_s, w_s, r_await, w_await, aqu in zip(
        f["r_s"], f["w_s"], f["r_await"], f["w_await"], f["aqu_sz"], strict=True
    ):
        if math.isnan(r_s):
            continue  # no rates then
        value = quiet_figures(r_s, w_s, r_await, w_await, aqu)
        if value is not None:
            out.append(value)
    return out


class QuietHistory:
    """The quiet awaits before any frame of one timeline (:meth:`quiet_before`).

    Thread-safe; meant for the worker that judges looked-up frames (it may read a recording).
    """

    def __init__(self, timeline: Timeline, seconds: float = QUIET_LOOKBACK_S) -> None:
        self.timeline = timeline
        self.seconds = seconds
        self._lock = threading.Lock()
        self._kept: tuple[str, float, float, list[tuple[float, float]]] | None = None
        """A recording's stretch last read: device, from, to, and its (wall, quiet await)."""

    def quiet_before(self, frame: Frame) -> Quiet:
        """A device's quiet awaits in the timeline's frames before ``frame`` (read when asked)."""
        end = frame.wall_time - _BEFORE

        def quiet(device: str) -> list[float]:
            with self._lock:
                values = self._read(self._timeline_of(frame), device, end)
            return values[-QUIET_KEEP:]

        return quiet

    def every_quiet_before(self, frame: Frame) -> Quiet:
        """:meth:`quiet_before` for many devices (``snapshot --from``'s first report): a
        recording is read once for all of them, at the first device asked for."""
        end = frame.wall_time - _BEFORE
        timeline = self._timeline_of(frame)
        table: dict[str, list[float]] | None = None

        def quiet(device: str) -> list[float]:
            nonlocal table
            with self._lock:
                if isinstance(timeline, Sampled) and getattr(timeline, "interval", None) is None:
                    if table is None:
                        table = _every_quiet(timeline, end - self.seconds, end)
                    values = table.get(device, [])
                else:
                    values = self._read(timeline, device, end)
            return values[-QUIET_KEEP:]

        return quiet

    def _timeline_of(self, frame: Frame) -> Timeline:
        """The part of a layered history (the frame store's ring after the older recordings)
        ``frame`` comes from."""
        timeline = self.timeline
        ring: Timeline | None = getattr(timeline, "ring", None)
        if ring is None:
            return timeline
        span = ring.span()
        if span is not None and frame.wall_time >= span[0]:
            return ring
        older: Timeline | None = getattr(timeline, "older", None)
        return older if older is not None else ring

    def _read(self, timeline: Timeline, device: str, end: float) -> list[float]:
        start = end - self.seconds
        if isinstance(timeline, Charted):
            return column_quiet(timeline.chart(device, start, end)[0])
        if isinstance(timeline, Sampled) and getattr(timeline, "interval", None) is None:
            return [value for _wall, value in self._recorded(timeline, device, start, end)]
        return [
            value
            for f in timeline.window(end, self.seconds)
            if (value := quiet_await(f.rates.get(device))) is not None
        ]

    def _recorded(
        self, timeline: Sampled, device: str, start: float, end: float
    ) -> list[tuple[float, float]]:
        """``device``'s quiet awaits in ``(start, end]`` of a recording, by wall time; what
        the last read covered is not read again."""
        kept = self._kept
        if kept is None or kept[0] != device or kept[2] < start or end < kept[1]:
            got = _quiet_samples(timeline, device, start, end)
        else:
            _, lo, hi, values = kept
            got = _quiet_samples(timeline, device, start, lo) if start < lo else []
            got += [(w, v) for w, v in values if max(start, lo) < w <= min(end, hi)]
            if end > hi:
                got += _quiet_samples(timeline, device, hi, end)
        self._kept = (device, start, end, got)
        return got


def _pairs(timeline: Sampled, start: float, end: float) -> Iterator[tuple[Sample, Sample]]:
    """(before, now) for each sample in ``(start, end]`` with rates since the one before."""
    for now, before in timeline.samples(start, end):
        sample = now.sample
        prev = before.sample if before is not None else None
        if sample.wall_time > start and prev is not None and prev.monotonic < sample.monotonic:
            yield prev, sample


def _quiet_samples(
    timeline: Sampled, device: str, start: float, end: float
) -> list[tuple[float, float]]:
    """(wall, quiet await) of ``device`` for the samples in ``(start, end]``, from the raw
    counters of each and the one before it (no frame is built)."""
    out = []
    for prev, sample in _pairs(timeline, start, end):
        cur, was = sample.counters.get(device), prev.counters.get(device)
        if cur is None or was is None:
            continue
        value = quiet_await(compute_rates(was, cur, sample.monotonic - prev.monotonic))
        if value is not None:
            out.append((sample.wall_time, value))
    return out


def _every_quiet(timeline: Sampled, start: float, end: float) -> dict[str, list[float]]:
    """Every device's quiet awaits in the samples in ``(start, end]``, oldest first."""
    out: dict[str, list[float]] = {}
    for prev, sample in _pairs(timeline, start, end):
        elapsed = sample.monotonic - prev.monotonic
        for name, cur in sample.counters.items():
            was = prev.counters.get(name)
            value = quiet_await(compute_rates(was, cur, elapsed)) if was is not None else None
            if value is not None:
                out.setdefault(name, []).append(value)
    return out
