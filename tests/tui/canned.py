"""A Sampler that replays the tui_host fixture deterministically, for layout pinning.

Real roots are used everywhere else; this double exists only so snapshot tests see the same
figures on every run (a real sampler's measured interval differs per run).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from types import MappingProxyType

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import IN_FLIGHT, DiskCounters, parse_diskstats
from iotop_plus.sampling.disks.rates import compute_rates
from iotop_plus.sampling.disks.sampler import HostInfo, Sample, Sampler
from iotop_plus.sampling.store.history import History
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


_HISTORIES: dict[tuple[type[CannedSampler], Roots, int], History] = {}
"""Each canned history built once per process; every app gets its own copy."""


def canned_history(sampler: CannedSampler, seconds: int = 120) -> History:
    """A minute or two of varied, deterministic history ending just before the first sample.

    The same for every app on the same roots: built once (about 10 ms) and copied (under 1 ms),
    since most Pilot tests start an app with it."""
    key = (type(sampler), sampler.roots, seconds)
    if key not in _HISTORIES:
        _HISTORIES[key] = _build_history(sampler, seconds)
    return copy.deepcopy(_HISTORIES[key])


def _build_history(sampler: CannedSampler, seconds: int) -> History:
    history = History(600)
    for k in range(seconds):
        t = START - seconds + k
        load = 1.0 + 0.6 * math.sin(k / 9.0)
        a = sampler.counters_at(0)
        b = sampler.counters_at(load)
        rates = {name: compute_rates(a[name], b[name], 1.0) for name in a}
        history.record(t, rates)
    return history


def canned_app(
    config: Config | None = None, with_history: bool = True, devices: tuple[str, ...] = ()
) -> IotopPlusApp:
    """The real app on the tui_host fixture with canned samples (10 s interval)."""
    sampler = CannedSampler()
    history = canned_history(sampler) if with_history else None
    config = config or Config(interval=10.0)
    return make_app(
        HOST_ROOTS,
        config,
        sampler=sampler,
        history=history,
        host=sampler.host_info(),
        devices=devices,
    )
