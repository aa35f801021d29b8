"""The iostat -x formulas: fixture pairs, wrap, reset, vanishing devices, zero divisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotop_plus.sampling.disks.diskstats import (
    MS_WRAP,
    DiskCounters,
    counter_deltas,
    parse_diskstats,
)
from iotop_plus.sampling.disks.rates import COLUMNS, DeviceRates, compute_all, compute_rates

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _pair(scenario: str) -> tuple[dict[str, DiskCounters], dict[str, DiskCounters]]:
    proc = FIXTURES / scenario / "proc"
    return (
        parse_diskstats((proc / "diskstats").read_text()),
        parse_diskstats((proc / "diskstats.t1").read_text()),
    )


def _counters(values: list[int], name: str = "sda", major: int = 8, minor: int = 0) -> DiskCounters:
    padded = tuple(values) + (0,) * (17 - len(values))
    return DiskCounters(major, minor, name, padded, 17)


def test_nvme_pair_gives_the_iostat_figures() -> None:
    """nvme0n1 over one second (values worked out by hand from the fixture)."""
    t0, t1 = _pair("nvme")
    r = compute_rates(t0["nvme0n1"], t1["nvme0n1"], 1.0)
    assert r is not None
    assert (r.r_s, r.w_s, r.d_s, r.f_s) == (2000, 500, 10, 40)
    assert (r.rkb_s, r.wkb_s, r.dkb_s) == (32000, 4000, 10240)
    assert (r.rrqm_s, r.wrqm_s, r.drqm_s) == (50, 100, 0)
    assert r.rrqm_pct == pytest.approx(50 / 2050 * 100)
    assert r.wrqm_pct == pytest.approx(100 / 600 * 100)
    assert r.drqm_pct == 0
    assert (r.r_await, r.w_await, r.d_await, r.f_await) == (0.5, 1.5, 0.5, 0.5)
    assert (r.rareq_sz, r.wareq_sz, r.dareq_sz) == (16, 8, 1024)
    assert r.aqu_sz == pytest.approx(1.76)
    assert r.util == pytest.approx(80.0)
    assert r.in_flight == 3
    assert r.iops == 2500 and r.kb_s == 36000


def test_rates_are_per_second_of_the_measured_interval() -> None:
    t0, t1 = _pair("nvme")
    one = compute_rates(t0["nvme0n1"], t1["nvme0n1"], 1.0)
    half = compute_rates(t0["nvme0n1"], t1["nvme0n1"], 0.5)
    assert one is not None and half is not None
    assert half.r_s == 2 * one.r_s and half.util == 2 * one.util and half.aqu_sz == 2 * one.aqu_sz
    # Per-I/O figures do not depend on the interval.
    assert (half.r_await, half.rareq_sz, half.rrqm_pct) == (one.r_await, one.rareq_sz, one.rrqm_pct)


@pytest.mark.parametrize("scenario", ["kernel-2.6", "kernel-4.14", "kernel-5.4", "dm", "md"])
def test_every_fixture_pair_gives_finite_non_negative_rates(scenario: str) -> None:
    t0, t1 = _pair(scenario)
    rates = compute_all(t0, t1, 1.0)
    assert set(rates) == set(t1)
    for name, r in rates.items():
        assert r is not None, name
        for value in _values(r):
            assert 0 <= value < 1e9, (name, value)


def test_14_field_kernel_has_zero_discard_and_flush_columns() -> None:
    t0, t1 = _pair("kernel-4.14")
    r = compute_rates(t0["sda"], t1["sda"], 1.0)
    assert r is not None
    assert (r.d_s, r.dkb_s, r.d_await, r.dareq_sz, r.f_s, r.f_await) == (0, 0, 0, 0, 0, 0)
    assert r.r_s == 100 and r.rareq_sz == 4 and r.r_await == 2
    assert r.w_s == 50 and r.wareq_sz == 8 and r.w_await == 8
    assert r.rrqm_pct == pytest.approx(10 / 110 * 100)


def test_18_field_kernel_has_discards() -> None:
    t0, t1 = _pair("kernel-5.4")
    r = compute_rates(t0["sda"], t1["sda"], 1.0)
    assert r is not None
    assert (r.d_s, r.drqm_s, r.dkb_s, r.dareq_sz, r.d_await) == (10, 2, 10240, 1024, 2)
    assert r.drqm_pct == pytest.approx(2 / 12 * 100)
    assert r.f_s == 0


def test_old_partition_lines_give_counts_and_sizes_and_zero_times() -> None:
    t0, t1 = _pair("kernel-2.6")
    r = compute_rates(t0["hda1"], t1["hda1"], 1.0)
    assert r is not None
    assert (r.r_s, r.rkb_s, r.rareq_sz) == (100, 800, 8)
    assert (r.w_s, r.wkb_s, r.wareq_sz) == (50, 400, 8)
    assert (r.r_await, r.util, r.aqu_sz) == (0, 0, 0)


def test_md_device_has_no_time_counters() -> None:
    """md reports no ms fields: await and util read 0, counts are real."""
    t0, t1 = _pair("md")
    r = compute_rates(t0["md0"], t1["md0"], 1.0)
    assert r is not None
    assert (r.r_s, r.w_s, r.rareq_sz, r.wareq_sz) == (200, 80, 40, 16)
    assert (r.r_await, r.w_await, r.util, r.aqu_sz) == (0, 0, 0, 0)


def test_ms_counters_wrap_modulo_2_32() -> None:
    """Every ms field near 2**32 wraps to a small positive delta, never a negative one."""
    w = MS_WRAP
    before = _counters(
        [100, 0, 800, w - 10, 50, 0, 400, w - 1, 0, w - 500, w - 40, 5, 0, 80, w - 3, 4, w - 6]
    )
    after = _counters([200, 0, 1600, 90, 100, 0, 800, 49, 1, 300, 60, 10, 0, 160, 7, 8, 2])
    d = counter_deltas(before, after)
    assert d is not None
    r = compute_rates(before, after, 1.0)
    assert r is not None
    assert r.r_await == 1.0  # (90 + 10) ms / 100 reads
    assert r.w_await == 1.0  # (49 + 1) ms / 50 writes
    assert r.util == 80.0  # io_ticks 500 + 300 = 800 ms of 1 s
    assert r.aqu_sz == 0.1  # 100 ms of weighted time
    assert r.d_await == 2.0  # (7 + 3) ms / 5 discards
    assert r.f_await == 2.0  # (2 + 6) ms / 4 flushes


def test_counter_reset_gives_no_rates_not_huge_numbers() -> None:
    """A count or sector field going backwards means the device was re-created."""
    before = _counters([5000, 10, 40000, 100, 3000, 5, 24000, 90, 0, 400, 500, 7, 1, 56, 3, 9])
    for index in (0, 1, 2, 4, 5, 6, 11, 12, 13, 15):
        values = list(before.values)
        values[index] -= 1
        after = DiskCounters(8, 0, "sda", tuple(values), 17)
        assert compute_rates(before, after, 1.0) is None, index
    # The device came back from zero: every count is lower.
    fresh = _counters([3, 0, 24, 1, 0, 0, 0, 0, 0, 2, 2])
    assert compute_rates(before, fresh, 1.0) is None


def test_in_flight_going_down_is_not_a_reset() -> None:
    before = _counters([10, 0, 80, 5, 0, 0, 0, 0, 7, 10, 20])
    after = _counters([20, 0, 160, 10, 0, 0, 0, 0, 0, 20, 40])
    r = compute_rates(before, after, 1.0)
    assert r is not None and r.in_flight == 0 and r.r_s == 10


def test_same_name_different_device_gives_no_rates() -> None:
    before = _counters([10, 0, 80], name="loop0", major=7, minor=0)
    after = _counters([20, 0, 160], name="loop0", major=259, minor=5)
    assert compute_rates(before, after, 1.0) is None


@pytest.mark.parametrize("elapsed", [0.0, -1.0])
def test_non_positive_interval_gives_no_rates(elapsed: float) -> None:
    c = _counters([10, 0, 80])
    assert compute_rates(c, c, elapsed) is None


def test_idle_interval_is_all_zero_with_the_in_flight_gauge() -> None:
    c = _counters([10, 1, 80, 5, 3, 0, 24, 2, 2, 10, 20])
    r = compute_rates(c, c, 1.0)
    assert r is not None
    assert all(v == 0 for v in _values(r)[:-1])
    assert r.in_flight == 2


def test_zero_divisions_give_zero_like_iostat() -> None:
    """No reads: r_await, rareq-sz and %rrqm are 0; merges without completions too."""
    before = _counters([10, 0, 80, 5, 10, 0, 80, 5, 0, 10, 10])
    after = _counters([10, 0, 80, 5, 20, 0, 160, 25, 0, 30, 30])
    r = compute_rates(before, after, 1.0)
    assert r is not None
    assert (r.r_s, r.r_await, r.rareq_sz, r.rrqm_pct) == (0, 0, 0, 0)
    assert (r.d_await, r.dareq_sz, r.drqm_pct, r.f_await) == (0, 0, 0, 0)
    assert r.w_await == 2 and r.wareq_sz == 4


def test_merge_percentage_counts_merged_against_all_requests() -> None:
    """%rrqm is merged / (merged + completed), as iostat computes it."""
    before = _counters([10, 0, 80])
    after = _counters([11, 3, 88])
    r = compute_rates(before, after, 1.0)
    assert r is not None and r.rrqm_pct == 75.0


def test_first_sample_and_vanishing_and_new_devices() -> None:
    """compute_all: rates only for devices present in both samples."""
    t0, t1 = _pair("dm")
    # First sample: nothing to compare with, so no rates at all (None, never 0).
    assert compute_all({}, t0, 1.0) == dict.fromkeys(t0)
    # dm-1 vanished between the samples: it is simply absent from the result.
    gone = {n: c for n, c in t1.items() if n != "dm-1"}
    rates = compute_all(t0, gone, 1.0)
    assert set(rates) == set(gone)
    assert all(r is not None for r in rates.values())
    # A new device appears: it has no rates for its first interval.
    new = dict(t1, **{"dm-2": _counters([5, 0, 40], name="dm-2", major=253, minor=2)})
    rates = compute_all(t0, new, 1.0)
    assert rates["dm-2"] is None and rates["dm-0"] is not None


def _values(r: DeviceRates) -> list[float]:
    return [float(getattr(r, f)) for f in COLUMNS]
