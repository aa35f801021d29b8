"""History.record keeps what one append per device per metric kept, frames wrapping around."""

from __future__ import annotations

import gc
import random
import weakref
from array import array
from collections import deque

from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.store.history import METRICS, DeviceHistory, History


def _float32(value: float) -> float:
    return array("f", [value])[0]


def _random_rates(rng: random.Random) -> DeviceRates:
    before = tuple(rng.randrange(10**6) for _ in range(17))
    after = tuple(b + rng.choice((0, 0, 1, rng.randrange(5_000))) for b in before)
    return DeviceRates(before, after, rng.choice((1.0, 0.25, 1.0003)))


def test_every_ring_holds_the_last_figures_of_its_own_frames() -> None:
    rng = random.Random(7)
    capacity = 4
    history = History(capacity=capacity)
    kept: dict[str, dict[str, deque[float]]] = {}
    for frame in range(11):
        # Devices come and go, and a device without rates this frame is skipped.
        rates: dict[str, DeviceRates | None] = {
            f"sd{i}": None if rng.random() < 0.3 else _random_rates(rng)
            for i in range(5)
            if rng.random() < 0.9
        }
        history.record(float(frame), rates)
        for name, r in rates.items():
            if r is not None:
                rings = kept.setdefault(name, {})
                rings.setdefault("t", deque(maxlen=capacity)).append(float(frame))
                for metric in METRICS:
                    figure = _float32(float(getattr(r, metric)))
                    rings.setdefault(metric, deque(maxlen=capacity)).append(figure)
    assert set(history.devices) == set(kept)
    for name, rings in kept.items():
        hist = history.get(name)
        assert hist is not None
        assert list(hist.timestamps) == list(rings["t"])
        for metric in METRICS:
            assert list(hist.series[metric]) == list(rings[metric]), (name, metric)


def test_record_only_the_named_devices() -> None:
    rng = random.Random(3)
    history = History(capacity=3)
    history.record(1.0, {"sda": _random_rates(rng), "sdb": _random_rates(rng)}, only=["sdb"])
    assert list(history.devices) == ["sdb"]


def test_a_device_history_built_by_hand_wraps_like_the_recorded_one() -> None:
    """The scrubber's own DeviceHistory (``append`` with rates) keeps the same figures."""
    rng = random.Random(5)
    frames = [_random_rates(rng) for _ in range(7)]
    by_hand = DeviceHistory(3)
    history = History(capacity=3)
    for t, r in enumerate(frames):
        by_hand.append(float(t), r)
        history.record(float(t), {"sda": r})
    recorded = history.get("sda")
    assert recorded is not None
    assert list(by_hand.timestamps) == list(recorded.timestamps) == [4.0, 5.0, 6.0]
    for metric in METRICS:
        assert list(by_hand.series[metric]) == list(recorded.series[metric])


def test_a_forgotten_device_is_freed_at_once_without_the_collector() -> None:
    """Its series views hold its parts, not the history: no cycle waits for a collection."""
    history = History(capacity=3)
    history.record(1.0, {"sda": _random_rates(random.Random(1))})
    kept = weakref.ref(history.devices["sda"])
    gc.disable()
    try:
        history.forget([])
        assert kept() is None
    finally:
        gc.enable()


def test_a_series_reads_as_a_ring_does() -> None:
    rng = random.Random(2)
    history = History(capacity=3)
    for t in range(5):
        history.record(float(t), {"sda": _random_rates(rng)})
    sda = history.get("sda")
    assert sda is not None
    for metric in METRICS:
        series = sda.series[metric]
        assert series.capacity == 3 and len(series) == 3
        assert series.first() == next(iter(series))
    assert DeviceHistory(3).series["r_s"].first() is None
