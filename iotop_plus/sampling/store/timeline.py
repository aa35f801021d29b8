"""A :class:`Timeline`: frames that can be looked up by time (history and replay).

The TUI scrubs through a timeline. Its frame store of recent frames is one; a recording
(``iotop_plus.record``) is another. Both answer the same questions, so the views never know
which one they are showing. The charts draw :class:`Columns` of a device's figures and
:class:`Mark` s: the store keeps them beside its frames (:class:`Charted`); from any other
timeline they are read from its frames (:func:`frame_columns`, :func:`event_marks`).

Times are wall-clock seconds since the epoch (UTC), as :attr:`Frame.wall_time`, live, paused,
scrubbed and replayed alike.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from iotop_plus.sampling.frame.model import Frame


class Timeline(Protocol):
    """Frames by time. Each frame's rates cover the interval since the frame before it."""

    def span(self) -> tuple[float, float] | None:
        """Wall times of the first and last frame, or None while empty."""
        ...

    def frame_at(self, wall: float) -> Frame | None:
        """The frame at ``wall`` or the last one before it (the first if ``wall`` is earlier)."""
        ...

    def step(self, wall: float, n: int) -> Frame | None:
        """The frame ``n`` samples after (``n > 0``) or before (``n < 0``) the one at ``wall``.

        Clamped to the ends; None while empty.
        """
        ...

    def window(self, end: float, seconds: float) -> list[Frame]:
        """Frames with ``end - seconds < wall_time <= end``, oldest first (for the charts)."""
        ...


METRICS: tuple[str, ...] = (
    "r_s",
    "w_s",
    "rkb_s",
    "wkb_s",
    "r_await",
    "w_await",
    "aqu_sz",
    "in_flight",
    "util",
)
"""The figures a chart can draw, by :class:`DeviceRates` attribute name."""

MARKED_EVENTS = ("setting", "probe", "writeback", "io-error")
"""Frame event kinds drawn as marks on the charts."""


@dataclass(frozen=True)
class Mark:
    """A moment worth marking on the charts, such as a setting change."""

    timestamp: float
    """Wall time of the event."""
    label: str
    """Short text, e.g. ``read_ahead_kb 128→16``."""
    device: str | None = None
    """The device it concerns, or None for all."""


@dataclass(frozen=True)
class Columns:
    """One device's chart figures over a stretch of time, oldest first."""

    walls: array[float]
    """Wall time of each point."""
    figures: dict[str, array[float]]
    """Each of :data:`METRICS` (NaN: no rates then)."""

    def __len__(self) -> int:
        return len(self.walls)

    def with_rates(self) -> Columns:
        """The points where the device had rates (a device's first frame has none)."""
        first = self.figures[METRICS[0]]
        if not any(math.isnan(v) for v in first):
            return self
        keep = [i for i, v in enumerate(first) if not math.isnan(v)]
        return Columns(
            array("d", [self.walls[i] for i in keep]),
            {m: array("f", [vs[i] for i in keep]) for m, vs in self.figures.items()},
        )

    def between(self, t0: float, t1: float) -> Columns:
        """The points with ``t0 < wall <= t1`` (a copy)."""
        lo, hi = bisect_right(self.walls, t0), bisect_right(self.walls, t1)
        return Columns(self.walls[lo:hi], {m: vs[lo:hi] for m, vs in self.figures.items()})

    def extend(self, later: Columns) -> None:
        """Add ``later``'s points after these."""
        self.walls.extend(later.walls)
        for metric, values in later.figures.items():
            self.figures[metric].extend(values)


def no_columns() -> Columns:
    """Columns without a point."""
    return Columns(array("d"), {m: array("f") for m in METRICS})


_NAN = float("nan")


def frame_columns(frames: Sequence[Frame], device: str) -> Columns:
    """``device``'s figures in ``frames`` (oldest first), only while it was the device it is
    in the last of them (the same identity)."""
    out = no_columns()
    if not frames:
        return out
    wanted = frames[-1].sample.identities.get(device, device)
    for frame in frames:
        if device not in frame.sample.counters:
            continue
        if frame.sample.identities.get(device, device) != wanted:
            continue
        rates = frame.rates.get(device)
        out.walls.append(frame.wall_time)
        for metric in METRICS:
            value = getattr(rates, metric) if rates is not None else None
            out.figures[metric].append(_NAN if value is None else value)
    return out


def event_marks(frames: Iterable[Frame]) -> Iterator[Mark]:
    """A mark per setting or probe event of ``frames``, at the frame's wall time."""
    for frame in frames:
        for event in frame.events:
            if event.kind in MARKED_EVENTS:
                yield Mark(frame.wall_time, event.text, event.device)


@runtime_checkable
class Charted(Protocol):
    """A timeline that keeps each device's chart figures beside its frames."""

    def chart(self, device: str, t0: float, t1: float) -> tuple[Columns, list[Mark]]:
        """``device``'s figures and the marks for frames with ``t0 < wall_time <= t1``."""
        ...
