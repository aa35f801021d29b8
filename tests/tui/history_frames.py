"""Canned frames with figures that differ per frame, for the history and replay tests."""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from tests.tui.canned import HOST_ROOTS, START, CannedSampler

LIVE_WALL = 1_700_000_000.0
"""Wall time of the canned app's first live frame (CannedSampler's)."""


def load(k: int) -> int:
    """The load of interval ``k``: 1 to 7 times the fixture's one-second step."""
    return 1 + k % 7


class VaryingSampler(CannedSampler):
    """Sample k is taken at ``first_wall + k`` with ``load(k)`` seconds' worth of I/O since k-1."""

    def __init__(self, first_wall: float, first_monotonic: float) -> None:
        super().__init__()
        self.first_wall = first_wall
        self.first_monotonic = first_monotonic
        self.position = 0.0

    def sample(self) -> Sample:
        k = self.calls
        self.calls += 1
        if k:
            self.position += load(k)
        counters = MappingProxyType(self.counters_at(self.position))
        return Sample(self.first_monotonic + k, self.first_wall + k, counters)


def varying_frames(count: int, first_wall: float, first_monotonic: float = START) -> list[Frame]:
    """``count`` frames one second apart whose rates differ from one frame to the next."""
    source = LiveSource(HOST_ROOTS, VaryingSampler(first_wall, first_monotonic))
    return [source.next_frame() for _ in range(count)]


def before_live(count: int) -> list[Frame]:
    """``count`` frames ending one second before the canned app's first live frame."""
    return varying_frames(count, LIVE_WALL - count, START - count)


def fill(store: FrameStore, frames: Iterable[Frame]) -> FrameStore:
    """Append ``frames`` in order; returns ``store``."""
    for frame in frames:
        store.append(frame)
    return store
