"""History: fixed-size ring buffers per device, and marks."""

from __future__ import annotations

import tracemalloc
from collections import deque

from hypothesis import given
from hypothesis import strategies as st

from iotop_plus.sampling.disks.rates import COLUMNS, DeviceRates
from iotop_plus.sampling.store.history import METRICS, History, Mark, Ring


def _rates(r_s: float, in_flight: int = 0) -> DeviceRates:
    """Rates of one second with ``r_s`` reads and ``r_s`` ms of io_ticks."""
    before = (0,) * 17
    after = (int(r_s), 0, 0, 0, 0, 0, 0, 0, in_flight, int(r_s), 0, 0, 0, 0, 0, 0, 0)
    return DeviceRates(before, after, 1.0)


def test_records_every_metric_oldest_first() -> None:
    history = History(capacity=10)
    for t in range(3):
        history.record(float(t), {"sda": _rates(100.0 * t, in_flight=t)})
    sda = history.get("sda")
    assert sda is not None and len(sda) == 3
    assert list(sda.timestamps) == [0.0, 1.0, 2.0]
    assert list(sda.series["r_s"]) == [0.0, 100.0, 200.0]
    assert list(sda.series["util"]) == [0.0, 10.0, 20.0]
    assert list(sda.series["in_flight"]) == [0.0, 1.0, 2.0]
    assert set(sda.series) == set(METRICS)
    for metric in METRICS:  # every chart metric is a real DeviceRates figure
        assert metric in COLUMNS


def test_capacity_drops_the_oldest() -> None:
    history = History(capacity=5)
    for t in range(12):
        history.record(float(t), {"sda": _rates(float(t))})
    sda = history.get("sda")
    assert sda is not None
    assert list(sda.timestamps) == [7.0, 8.0, 9.0, 10.0, 11.0]
    assert list(sda.series["r_s"]) == [7.0, 8.0, 9.0, 10.0, 11.0]


def test_devices_without_rates_are_skipped_and_only_limits_the_set() -> None:
    history = History()
    history.record(1.0, {"sda": None, "sdb": _rates(5.0), "sdc": _rates(6.0)}, only=["sda", "sdb"])
    assert history.get("sda") is None
    assert history.get("sdc") is None
    sdb = history.get("sdb")
    assert sdb is not None and len(sdb) == 1
    # A name asked for but absent from the rates is simply not recorded.
    history.record(2.0, {}, only=["sdz"])
    assert history.get("sdz") is None


def test_forget_drops_vanished_devices() -> None:
    history = History()
    history.record(1.0, {"sda": _rates(1.0), "loop7": _rates(2.0)})
    history.forget(["sda"])
    assert set(history.devices) == {"sda"}


def test_marks_are_bounded() -> None:
    history = History(max_marks=3)
    for i in range(5):
        history.mark(Mark(float(i), f"read_ahead_kb {i}", "sda"))
    assert [m.label for m in history.marks] == [
        "read_ahead_kb 2",
        "read_ahead_kb 3",
        "read_ahead_kb 4",
    ]
    assert history.marks[0].device == "sda"


@given(
    capacity=st.integers(min_value=1, max_value=20),
    values=st.lists(st.integers(min_value=-(10**6), max_value=10**6), max_size=80),
)
def test_a_ring_keeps_what_a_bounded_deque_keeps(capacity: int, values: list[int]) -> None:
    ring = Ring(capacity, "d")
    kept: deque[float] = deque(maxlen=capacity)
    for v in values:
        ring.append(float(v))
        kept.append(float(v))
        assert list(ring) == list(kept) and len(ring) == len(kept)


def test_a_full_history_costs_under_40_kib_a_device() -> None:
    # 10 series x 600 points: deques of floats held 168 KiB a device, these rings ~29.
    history = History(capacity=600)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for t in range(600):
        history.record(float(t), {f"sd{i}": _rates(float(t + i)) for i in range(20)})
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert used / 20 < 40 * 1024, f"{used / 20 / 1024:.0f} KiB a device"
