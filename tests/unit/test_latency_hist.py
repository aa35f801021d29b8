"""Histogram math: buckets, percentiles against exact ones, merging, JSON and CSV shapes."""

from __future__ import annotations

import math
import random

import pytest

from iotop_plus.sampling.latency.hist import (
    LATENCY_CSV_COLUMNS,
    SUB_BUCKETS,
    DeviceLatency,
    Histogram,
    OpLatency,
    bucket_bounds,
    bucket_index,
    bucket_of,
    csv_cells,
)


def exact_percentile(values: list[int], rank: float) -> float:
    ordered = sorted(values)
    k = max(0, math.ceil(rank / 100 * len(ordered)) - 1)
    return float(ordered[k])


VALUES = [1, 2, 3, 7, 8, 9, 15, 16, 1000, 40_000, 85_500, 10**9, 2**40 + 5]


@pytest.mark.parametrize("value", VALUES)
def test_every_value_falls_inside_its_bucket(value: int) -> None:
    low, high = bucket_bounds(bucket_of(value))
    assert low <= value < high


def test_buckets_are_log_linear_with_at_least_four_per_power_of_two() -> None:
    assert SUB_BUCKETS >= 4
    edges = [bucket_bounds(bucket_index(16, s)) for s in range(SUB_BUCKETS)]
    assert edges[0][0] == 2**16 and edges[-1][1] == 2**17
    widths = {high - low for low, high in edges}
    assert widths == {2**16 // SUB_BUCKETS}
    # contiguous, no gaps
    assert all(edges[i][1] == edges[i + 1][0] for i in range(SUB_BUCKETS - 1))


def test_bucket_index_matches_the_tracer_recipe() -> None:
    # The bpftrace program computes exp by a ladder and sub as (v >> (exp - 3)) & 7.
    for v in (9, 100, 47_000, 123_456_789):
        exp = v.bit_length() - 1
        assert bucket_of(v) == bucket_index(exp, (v >> (exp - 3)) & 7)
    with pytest.raises(ValueError):
        bucket_index(3, SUB_BUCKETS)


@pytest.mark.parametrize(
    "distribution",
    ["uniform", "lognormal", "bimodal"],
)
def test_percentiles_within_15_percent_of_exact(distribution: str) -> None:
    rng = random.Random(14)
    if distribution == "uniform":
        values = [rng.randint(20_000, 90_000) for _ in range(50_000)]
    elif distribution == "lognormal":
        values = [int(rng.lognormvariate(11, 1.2)) + 1 for _ in range(50_000)]
    else:  # a fast mode and 2 % of slow requests: a mean hides this
        values = [
            rng.randint(40_000, 60_000)
            if rng.random() < 0.98
            else rng.randint(30_000_000, 45_000_000)
            for _ in range(50_000)
        ]
    hist = Histogram.of(values)
    assert hist.count == len(values)
    for rank in (50, 90, 99, 99.9):
        got = hist.percentile(rank)
        exact = exact_percentile(values, rank)
        assert got is not None
        assert abs(got - exact) <= 0.15 * exact, (rank, got, exact)
    assert hist.percentile(100) == max(values)
    assert hist.max_ns == max(values)


def test_empty_histogram_has_no_percentiles() -> None:
    hist = Histogram()
    assert hist.percentile(50) is None and hist.mean_ns is None
    assert hist.summary() == {
        "p50_ms": None,
        "p90_ms": None,
        "p99_ms": None,
        "p999_ms": None,
        "max_ms": None,
        "count": 0,
    }


def test_merging_two_intervals_equals_one_histogram_of_both() -> None:
    a, b = [10_000, 20_000, 30_000], [40_000, 1_000_000]
    merged = Histogram.of(a).merged(Histogram.of(b))
    assert merged == Histogram.of(a + b)


def test_device_latency_json_and_means() -> None:
    hist = Histogram.of([100_000] * 99 + [10_000_000])
    reads = OpLatency(hist, queue_sum_ns=400_000, queue_count=4)
    flush = OpLatency(Histogram.of([2_000_000]))
    dev = DeviceLatency({"read": reads, "flush": flush})
    doc = dev.to_json()
    assert set(doc) == {"read", "write", "flush", "queue_ms_mean", "device_ms_mean"}
    read = doc["read"]
    assert isinstance(read, dict) and read["count"] == 100 and read["max_ms"] == 10.0
    assert 0.09 <= read["p50_ms"] <= 0.11
    assert doc["write"] == Histogram().summary()
    assert doc["queue_ms_mean"] == 0.1
    assert doc["device_ms_mean"] == pytest.approx((99 * 0.1 + 10 + 2) / 101, abs=1e-3)
    share = dev.queue_share()
    assert share is not None and 0 < share < 0.1


def test_csv_cells_follow_the_ruled_columns() -> None:
    assert LATENCY_CSV_COLUMNS == (
        "r_p50_ms",
        "r_p99_ms",
        "r_p999_ms",
        "r_max_ms",
        "w_p50_ms",
        "w_p99_ms",
        "w_p999_ms",
        "w_max_ms",
        "queue_ms_mean",
        "device_ms_mean",
    )
    assert csv_cells(None) == [""] * 10
    cells = csv_cells(DeviceLatency({"write": OpLatency(Histogram.of([3_000_000]))}))
    assert cells[:4] == ["", "", "", ""]
    assert cells[7] == "3.000" and cells[8] == "" and cells[9] == "3.000"
