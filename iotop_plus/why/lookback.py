"""What the verdict knows of the frames before the one it judges.

:mod:`iotop_plus.why.diagnosis` judges one frame, but saturation and writeback are
judged over the last frames: the :data:`RECENT` frames just before it (each device's rates,
the host's dirty memory) and each device's quiet baseline, the median await of the earlier
frames in which its queue held at most :data:`QUIET_DEPTH` request (and it did some I/O).

A :class:`Lookback` is those facts for one judgement. A :class:`LookbackFeed` is given every
frame of one source in turn (``serve``'s sampler, ``snapshot``'s reports, the TUI's frames)
and answers :meth:`LookbackFeed.before` for any frame it saw.
"""

from __future__ import annotations

import statistics
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from iotop_plus.sampling.memory.dirty import MemoryPart

if TYPE_CHECKING:
    from iotop_plus.sampling.disks.rates import DeviceRates
    from iotop_plus.sampling.frame.model import Frame
    from iotop_plus.sampling.memory.dirty import Memory

RECENT = 5
"""Earlier frames a judgement looks back on (saturation in 4 of the last 5 frames)."""
QUIET_DEPTH = 1.0
"""aqu-sz at or under which a frame counts towards the device's quiet baseline."""
QUIET_KEEP = 900
"""Quiet frames kept per device for the baseline (15 minutes at 1 s)."""
MIN_IOPS = 1.0
"""A quiet frame did at least this many reads and writes a second (an idle frame's await of
0 is no baseline)."""


def await_ms(rates: DeviceRates) -> float:
    """The mean await of reads and writes together (ms)."""
    ios = rates.r_s + rates.w_s
    if ios <= 0:
        return 0.0
    return (rates.r_await * rates.r_s + rates.w_await * rates.w_s) / ios


def quiet_await(rates: DeviceRates | None) -> float | None:
    """``rates``' await when the interval was quiet (queue at most :data:`QUIET_DEPTH`, some
    I/O done), else None."""
    if rates is None or rates.aqu_sz > QUIET_DEPTH or rates.r_s + rates.w_s < MIN_IOPS:
        return None
    value = await_ms(rates)
    return value if value > 0 else None


def quiet_figures(
    r_s: float, w_s: float, r_await: float, w_await: float, aqu_sz: float
) -> float | None:
    """:func:`quiet_await` of an interval given by its figures (a chart's columns)."""
    ios = r_s + w_s
    if aqu_sz > QUIET_DEPTH or ios < MIN_IOPS:
        return None
    value = (r_await * r_s + w_await * w_s) / ios
    return value if value > 0 else None


class Lookback:
    """The earlier frames of one judgement, oldest first, and each device's quiet awaits."""

    def __init__(
        self,
        frames: Sequence[Frame] = (),
        quiet: Callable[[str], Sequence[float]] | None = None,
        rates: Mapping[str, Sequence[DeviceRates]] | None = None,
    ) -> None:
        """Args:
        frames: The frames just before the one judged, oldest first (the last
            :data:`RECENT` are used).
        quiet: A device's quiet awaits before the judged frame (a longer store than
            ``frames``); None: the quiet ones among ``frames``.
        rates: Earlier rates given by device instead of frames (tests, a single device).
        """
        self.frames = tuple(frames[-RECENT:])
        self._quiet = quiet
        self._rates = rates or {}
        self._baselines: dict[str, float | None] = {}

    def rates(self, device: str) -> list[DeviceRates]:
        """``device``'s rates in the earlier frames, oldest first."""
        given = self._rates.get(device)
        if given is not None:
            return list(given[-RECENT:])
        return [r for f in self.frames if (r := f.rates.get(device)) is not None]

    def memories(self) -> list[Memory]:
        """The host's dirty memory in the earlier frames, oldest first."""
        return [m for f in self.frames if (m := f.get(MemoryPart)) is not None]

    def baseline(self, device: str) -> float | None:
        """The median await (ms) of ``device``'s quiet earlier frames; None with none."""
        if device not in self._baselines:
            if self._quiet is not None:
                values: Sequence[float] = self._quiet(device)
            else:
                values = [a for r in self.rates(device) if (a := quiet_await(r)) is not None]
            self._baselines[device] = statistics.median(values) if values else None
        return self._baselines[device]


def as_lookback(recent: Lookback | Sequence[DeviceRates], device: str) -> Lookback:
    """``recent`` as a :class:`Lookback`: a plain list is ``device``'s earlier rates."""
    if isinstance(recent, Lookback):
        return recent
    return Lookback(rates={device: list(recent)})


class LookbackFeed:
    """Every frame of one source, in turn: the last :data:`RECENT` whole and each device's
    last :data:`QUIET_KEEP` quiet awaits, by frame sequence. Thread-safe."""

    def __init__(
        self, keep: int = QUIET_KEEP, prior: Callable[[str], Sequence[float]] | None = None
    ) -> None:
        """Args:
        keep: Quiet awaits kept per device.
        prior: A device's quiet awaits before the first frame (a recording's before a
            window), oldest first; kept until a new source begins.
        """
        self._keep = keep
        self._prior = prior
        self._frames: deque[Frame] = deque(maxlen=RECENT)
        self._seqs: deque[int] = deque(maxlen=RECENT)
        self._quiet: dict[str, deque[tuple[int, float]]] = {}
        self._last = 0
        self._first_wall: float | None = None
        """Wall time of the first frame taken from this source."""
        self._lock = threading.Lock()

    @property
    def taken(self) -> bool:
        """Whether any frame was taken."""
        return self._last > 0

    def add(self, frame: Frame, seq: int | None = None) -> None:
        """Take ``frame`` (once: the same sequence again is ignored; a lower one means a new
        source, and what was kept is dropped; a gap drops the recent frames). ``seq``: its
        place in the sequence, when not ``frame.seq`` (a caller that counts what it shows)."""
        seq = frame.seq if seq is None else seq
        if seq <= 0:
            return  # a hand-made frame has no place in a sequence
        with self._lock:
            if seq == self._last:
                return
            if seq < self._last:
                self._frames.clear()
                self._seqs.clear()
                self._quiet.clear()
                self._first_wall = None
                self._prior = None
            elif seq != self._last + 1:
                self._frames.clear()  # not the frames just before the next one
                self._seqs.clear()
            self._last = seq
            if self._first_wall is None:
                self._first_wall = frame.wall_time
            self._frames.append(frame)
            self._seqs.append(seq)
            if frame.inventory_changed:
                for gone in [n for n in self._quiet if n not in frame.rates]:
                    del self._quiet[gone]
            for name, rates in frame.rates.items():
                value = quiet_await(rates)
                if value is not None:
                    kept = self._quiet.get(name)
                    if kept is None:
                        kept = self._quiet[name] = deque(maxlen=self._keep)
                    kept.append((seq, value))

    def saw(self, frame: Frame) -> bool:
        """Whether ``frame`` is of the frames taken (not one from before this source began,
        such as an older recording's): its quiet awaits before it are here."""
        with self._lock:
            first = self._first_wall
            return first is not None and frame.wall_time >= first and 0 < frame.seq <= self._last

    def quiet_before(self, seq: int) -> Callable[[str], list[float]]:
        """A device's quiet awaits in the frames before sequence ``seq``."""

        def quiet(device: str) -> list[float]:
            with self._lock:
                kept = tuple(self._quiet.get(device, ()))
                prior = self._prior
            values = [value for at, value in kept if at < seq]
            if prior is not None and len(values) < self._keep:
                values = [*prior(device), *values][-self._keep :]
            return values

        return quiet

    def before(self, frame: Frame, seq: int | None = None) -> Lookback:
        """The lookback of ``frame`` (at ``seq``, default its own): the frames taken before
        it, and the quiet awaits."""
        seq = frame.seq if seq is None else seq
        if seq <= 0:
            return Lookback()
        with self._lock:
            frames = [f for f, at in zip(self._frames, self._seqs, strict=True) if at < seq]
        return Lookback(frames, self.quiet_before(seq))
