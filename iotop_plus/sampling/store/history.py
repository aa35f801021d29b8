"""Fixed-size ring buffers of recent rates per device, for the charts."""

from __future__ import annotations

import itertools
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter

from iotop_plus.sampling.disks.rates import DeviceRates, figure_columns
from iotop_plus.sampling.gcpause import gc_paused

#: The metrics a chart can draw, by DeviceRates attribute name.
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

_METRIC_FIGURES = attrgetter(*METRICS)
"""One device's figures in :data:`METRICS` order."""


@dataclass(frozen=True)
class Mark:
    """A moment worth marking on the charts, such as a setting change."""

    timestamp: float
    """Monotonic time of the event."""
    label: str
    """Short text, e.g. ``read_ahead_kb 128→16``."""
    device: str | None = None
    """The device it concerns, or None for all."""


class Ring:
    """The last ``capacity`` numbers appended, oldest first, in a typed array.

    A deque of floats costs 32 bytes a point (a float object and its pointer); at 2,000
    devices x 10 series x 600 points that was ~380 MB after ten minutes. Here a point is 4
    bytes (``"f"``, the charts' series) or 8 (``"d"``, the timestamps).
    """

    __slots__ = ("_data", "_start", "capacity")

    def __init__(self, capacity: int, typecode: str = "d") -> None:
        self.capacity = capacity
        self._data: array[float] = array(typecode)  # grows to capacity, then wraps around
        self._start = 0

    def append(self, value: float) -> None:
        """Add ``value``; beyond capacity, the oldest value is dropped."""
        if len(self._data) < self.capacity:
            self._data.append(value)
        else:
            self._data[self._start] = value
            self._start = (self._start + 1) % self.capacity

    def __len__(self) -> int:
        return len(self._data)

    def first(self) -> float | None:
        """The oldest value kept, or None when empty."""
        return self._data[self._start] if self._data else None

    def __iter__(self) -> Iterator[float]:
        start = self._start
        return itertools.chain(self._data[start:], self._data[:start])

    def values(self) -> array[float]:
        """The values, oldest first, as a new array (copied in C: no float object each)."""
        start = self._start
        return self._data[start:] + self._data[:start]


class Series:
    """One metric of a :class:`DeviceHistory`, oldest first, as a :class:`Ring` reads: a
    view of the device's figures, which are kept together, one interval after another."""

    __slots__ = ("_figures", "_offset", "_timestamps")

    def __init__(self, timestamps: Ring, figures: array[float], offset: int) -> None:
        # The history's parts, not the history: no reference cycle to wait for the collector.
        self._timestamps = timestamps
        self._figures = figures
        self._offset = offset

    @property
    def capacity(self) -> int:
        """The most values kept."""
        return self._timestamps.capacity

    def __len__(self) -> int:
        return len(self._timestamps)

    def first(self) -> float | None:
        """The oldest value kept, or None when empty."""
        if not len(self._timestamps):
            return None
        return self._figures[self._timestamps._start * _WIDTH + self._offset]

    def __iter__(self) -> Iterator[float]:
        return iter(self.values())

    def values(self) -> array[float]:
        """The values, oldest first, as a new array: the charts take a copy of nine series a
        frame, and a list made a float object of each point."""
        figures, k = self._figures, self._offset
        start = self._timestamps._start * _WIDTH
        return figures[start + k :: _WIDTH] + figures[k:start:_WIDTH]


_WIDTH = len(METRICS)


class DeviceHistory:
    """Recent values of each metric for one device (oldest first)."""

    def __init__(self, capacity: int) -> None:
        self.timestamps = Ring(capacity, "d")
        # float32: charts need ~3 significant digits, float32 keeps 7. One interval's figures
        # side by side: a ring per metric would make each frame's appends touch ten places
        # per device in memory (benchmarks/bench_frame_cost.py, docs/performance.md).
        self._figures: array[float] = array("f")
        self.series: dict[str, Series] = {
            m: Series(self.timestamps, self._figures, k) for k, m in enumerate(METRICS)
        }

    def append(self, timestamp: float, rates: DeviceRates) -> None:
        """Record one interval's rates."""
        self.append_figures(timestamp, _METRIC_FIGURES(rates))

    def append_figures(self, timestamp: float, figures: Iterable[float]) -> None:
        """Record one interval's figures, given in :data:`METRICS` order."""
        values = array("f", figures)
        if len(values) != _WIDTH:
            raise ValueError(f"{len(values)} figures, not {_WIDTH}: {values!r}")
        timestamps = self.timestamps
        if len(timestamps) < timestamps.capacity:
            self._figures.extend(values)
        else:
            at = timestamps._start * _WIDTH
            self._figures[at : at + _WIDTH] = values
        timestamps.append(timestamp)

    def __len__(self) -> int:
        return len(self.timestamps)


class History:
    """Ring buffers for every device seen, plus marks. Default: 10 minutes at 1 Hz."""

    def __init__(self, capacity: int = 600, max_marks: int = 100) -> None:
        self.capacity = capacity
        self.devices: dict[str, DeviceHistory] = {}
        self.marks: deque[Mark] = deque(maxlen=max_marks)
        self._identities: Mapping[str, str] = {}
        """The identity each device's series belong to (``Sample.identities``)."""

    def record(
        self,
        timestamp: float,
        rates: Mapping[str, DeviceRates | None],
        only: Iterable[str] | None = None,
        identities: Mapping[str, str] | None = None,
    ) -> None:
        """Append the rates of one interval; devices without rates are skipped. Series are
        keyed by each device's identity: a name that is another device now (``identities``
        changed for it) starts its series afresh."""
        if identities and identities is not self._identities:
            was = self._identities
            for name in [n for n in self.devices if was.get(n) != identities.get(n)]:
                if name in was:  # only devices whose identity was known and changed
                    del self.devices[name]
            self._identities = identities
        names = rates.keys() if only is None else only
        live = [name for name in names if rates.get(name) is not None]
        # Each figure for every device at once, then one row of figures per device;
        # the rows are the only objects made, and make no cycles: no collection.
        with gc_paused():
            columns = figure_columns([r for n in live if (r := rates[n]) is not None], METRICS)
            devices = self.devices
            for name, figures in zip(live, zip(*columns, strict=True), strict=True):
                hist = devices.get(name)
                if hist is None:
                    hist = devices[name] = DeviceHistory(self.capacity)
                hist.append_figures(timestamp, figures)

    def forget(self, keep: Iterable[str]) -> None:
        """Drop devices that are gone."""
        keep_set = set(keep)
        for name in [n for n in self.devices if n not in keep_set]:
            del self.devices[name]

    def mark(self, mark: Mark) -> None:
        """Remember an event to draw on the charts."""
        self.marks.append(mark)

    def oldest(self) -> float | None:
        """The timestamp of the oldest sample any device still keeps (where the charts'
        window starts), or None when nothing was recorded."""
        firsts = [t for h in self.devices.values() if (t := h.timestamps.first()) is not None]
        return min(firsts) if firsts else None

    def get(self, name: str) -> DeviceHistory | None:
        """History of one device, or None."""
        return self.devices.get(name)
