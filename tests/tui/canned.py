"""A Sampler that replays the tui_host fixture deterministically, for layout pinning.

Real roots are used everywhere else; this double exists only so snapshot tests see the same
figures on every run (a real sampler's measured interval differs per run).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType

from iotop_plus.config import Config
from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import IN_FLIGHT, DiskCounters, parse_diskstats
from iotop_plus.sampling.disks.sampler import HostInfo, Sample, Sampler
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.tui.app import IotopPlusApp, make_app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HOST_ROOTS = Roots(proc=FIXTURES / "tui_host" / "proc", sys=FIXTURES / "tui_host" / "sys")
START = 1000.0


def _parse(path: Path) -> dict[str, DiskCounters]:
    return parse_diskstats(path.read_text(), str(path), [], {})


class CannedSampler(Sampler):
    """Sample n is state A + n x (B - A), taken exactly n seconds after the first."""

    def __init__(self, roots: Roots = HOST_ROOTS) -> None:
        super().__init__(roots)
        self.state_a = _parse(roots.proc / "diskstats")
        self.state_b = _parse(roots.proc / "diskstats.next")
        self.calls = 0

    def counters_at(self, n: float) -> dict[str, DiskCounters]:
        """Counters ``n`` seconds after state A (in-flight stays a gauge)."""
        out = {}
        for name, a in self.state_a.items():
            b = self.state_b[name]
            values = [
                va if i == IN_FLIGHT else va + round(n * (vb - va))
                for i, (va, vb) in enumerate(zip(a.values, b.values, strict=True))
            ]
            out[name] = DiskCounters(a.major, a.minor, name, tuple(values), a.n_fields)
        return out

    def sample(self) -> Sample:
        n = self.calls
        self.calls += 1
        return Sample(START + n, 1_700_000_000.0 + n, MappingProxyType(self.counters_at(n)))

    def host_info(self) -> HostInfo:
        return HostInfo("db-primary-07", "6.1.0-18-amd64", 356521.37, True)


class _Before(CannedSampler):
    """The canned host over the ``seconds`` before the first sample, one sample a second, the
    load moving with a sine (the charts' history)."""

    def __init__(self, roots: Roots, seconds: int, steady: bool = False) -> None:
        super().__init__(roots)
        self.seconds = seconds
        self.steady = steady
        self.done = 0.0

    def sample(self) -> Sample:
        k = self.calls - 1  # the first sample is the base of the first rates
        self.calls += 1
        if k >= 0:
            self.done += 1.0 if self.steady else 1.0 + 0.6 * math.sin(k / 9.0)
        t = float(k - self.seconds)
        return Sample(START + t, 1_700_000_000.0 + t, MappingProxyType(self.counters_at(self.done)))


_HISTORIES: dict[tuple[type[CannedSampler], Roots, int], tuple[Frame, ...]] = {}
"""Each canned history's frames made once per process; every app gets its own store."""


def canned_history(sampler: CannedSampler, seconds: int = 120) -> FrameStore:
    """A frame store holding a minute or two of varied, deterministic frames ending just
    before the first sample.

    The same frames for every app on the same roots: made once (from the fixture, through the
    live source, so they carry the devices' identities) and appended to a new store."""
    key = (type(sampler), sampler.roots, seconds)
    if key not in _HISTORIES:
        _HISTORIES[key] = frames_before(sampler.roots, seconds)
    return filled(sampler.roots, _HISTORIES[key])


def frames_before(roots: Roots, seconds: int, steady: bool = False) -> tuple[Frame, ...]:
    """The canned host's frames over the ``seconds`` before the first sample, a second apart
    (and the one before them, without rates); ``steady``: the same rates in each."""
    source = live_source(roots, _Before(roots, seconds, steady))
    try:
        return tuple(source.next_frame() for _ in range(seconds + 1))
    finally:
        source.close()


def filled(roots: Roots, frames: Iterable[Frame]) -> FrameStore:
    """A frame store holding ``frames`` (a frame a second)."""
    store = FrameStore(15, 1.0, roots=roots)
    for frame in frames:
        store.append(frame)
    return store


def canned_app(
    config: Config | None = None, with_history: bool = True, devices: tuple[str, ...] = ()
) -> IotopPlusApp:
    """The real app on the tui_host fixture with canned samples (10 s interval)."""
    sampler = CannedSampler()
    config = config or Config(interval=10.0)
    history = canned_history(sampler) if with_history else None
    return make_app(
        HOST_ROOTS,
        config,
        sampler=sampler,
        store=history,
        host=sampler.host_info(),
        devices=devices,
    )
