"""The reading of experiments, on constructed step data: knees, plateaus, verdicts."""

from __future__ import annotations

import pytest

from iotop_plus.probe.experiment_plans import (
    AbRun,
    Spread,
    SweepStep,
    ab_order,
    analyze_ab,
    analyze_sweep,
    headline_metric,
    parse_ab_spec,
    sweep_depths,
    sweep_table,
)
from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.results import other_io_note


def _steps(points: list[tuple[int, float, float]]) -> list[SweepStep]:
    """(QD, IOPS, mean latency µs) -> steps."""
    return [SweepStep(qd, iops, lat, lat * 3, iops * 4, 50.0) for qd, iops, lat in points]


def test_depths_double_up_to_the_maximum_and_end_on_it() -> None:
    assert sweep_depths(128) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert sweep_depths(1) == (1,)
    assert sweep_depths(48) == (1, 2, 4, 8, 16, 32, 48)
    with pytest.raises(ValueError, match="at least 1"):
        sweep_depths(0)


def test_a_device_that_saturates_at_qd8_has_its_knee_there_and_plateau_after() -> None:
    # Like the seeds' NVMe curve: linear to QD 8, then IOPS flat while latency doubles.
    steps = _steps(
        [
            (1, 10_000, 100),
            (2, 19_800, 101),
            (4, 39_000, 102),
            (8, 76_000, 105),
            (16, 80_000, 200),
            (32, 81_000, 395),
            (64, 81_500, 785),
        ]
    )
    a = analyze_sweep(steps)
    assert a.linear_until_qd == 8
    assert a.full_saturation_qd == 16  # +5% IOPS while mean latency nearly doubles
    assert a.peak_iops == 81_500 and a.peak_qd == 64
    assert a.qd_90pct == 8  # 0.9 x 81,500 = 73,350


def test_ninety_percent_of_peak_is_the_first_qd_at_or_above_it() -> None:
    steps = _steps([(1, 100, 10), (2, 200, 10), (4, 380, 11), (8, 500, 16), (16, 520, 31)])
    a = analyze_sweep(steps)
    assert a.qd_90pct == 8  # 0.9 x 520 = 468
    assert a.linear_until_qd == 4  # 500 / (2 x 380) = 0.66
    assert a.full_saturation_qd == 16  # +4% IOPS, latency nearly doubled


def test_a_sweep_that_keeps_scaling_says_so() -> None:
    a = analyze_sweep(_steps([(1, 100, 10), (2, 200, 10), (4, 400, 10)]))
    assert a.linear_until_qd == 4
    assert a.full_saturation_qd is None
    assert "scaling: near-linear up to the deepest step, QD 4" in a.summary()
    assert any("not reached" in line for line in a.summary())


def test_a_sweep_with_a_device_capped_at_four_requests_bends_at_four() -> None:
    # nr_requests 4: deeper queues only wait in the block layer.
    steps = _steps(
        [(1, 5_000, 190), (2, 9_600, 200), (4, 18_000, 210), (8, 18_500, 420), (16, 18_300, 860)]
    )
    a = analyze_sweep(steps)
    assert a.linear_until_qd == 4
    assert a.full_saturation_qd == 8


def test_noise_that_dips_one_step_ends_the_linear_range_there() -> None:
    a = analyze_sweep(_steps([(1, 1000, 10), (2, 1200, 16), (4, 4000, 10)]))
    assert a.linear_until_qd == 1
    assert a.efficiencies[0] == (2, pytest.approx(0.6))
    # The verdict says the table scaled again after the dip, instead of leaving it at "slows".
    assert a.summary()[1] == (
        "scaling slows from QD 1: QD 2 gave 60% of the IOPS linear scaling predicts, "
        "but QD 4 scaled again (noise? longer steps would tell)"
    )


def test_no_steps_and_one_step() -> None:
    assert analyze_sweep([]).linear_until_qd is None
    one = analyze_sweep(_steps([(1, 100, 10)]))
    assert one.linear_until_qd is None and one.qd_90pct == 1
    assert any("not enough steps" in line for line in one.summary())
    assert analyze_sweep([]).summary() == ["no steps: nothing to read"]


def test_a_sweep_still_rising_at_its_deepest_step_does_not_claim_it_saturates() -> None:
    # Scaling slows past QD 4 (QD 8 gives 75% of linear), but IOPS climb to the last step:
    # the verdict must follow the table, whose peak is at QD 64.
    steps = _steps(
        [
            (1, 10_000, 100),
            (2, 18_000, 111),
            (4, 30_000, 133),
            (8, 45_000, 178),
            (16, 60_000, 267),
            (32, 80_000, 400),
            (64, 95_000, 674),
        ]
    )
    a = analyze_sweep(steps)
    lines = a.summary()
    assert a.peak_qd == 64 and a.qd_90pct == 64 and a.still_rising
    assert a.full_saturation_qd is None
    assert not any("saturation onset" in line or "saturates" in line for line in lines)
    assert lines[0] == (
        "90% of peak IOPS is reached at QD 64 (peak 95,000 IOPS at QD 64, the deepest step: "
        "still rising, a deeper queue may give more)"
    )
    assert "scaling slows from QD 4: QD 8 gave 75% of the IOPS linear scaling predicts" in lines
    assert any(line.startswith("full saturation: not reached") for line in lines)


def test_a_plateau_that_the_later_steps_climb_out_of_is_not_full_saturation() -> None:
    # QD 4 adds 5% while latency nearly doubles, then QD 8 and 16 double the IOPS again
    # (a noisy step on a shared machine): the table has not saturated at QD 4.
    steps = _steps(
        [(1, 10_000, 100), (2, 19_000, 105), (4, 20_000, 200), (8, 40_000, 200), (16, 75_000, 213)]
    )
    a = analyze_sweep(steps)
    assert a.full_saturation_qd is None
    assert a.peak_qd == 16 and a.still_rising
    assert not any(line.startswith("full saturation from") for line in a.summary())


def test_a_saturated_sweep_names_its_plateau_and_is_not_still_rising() -> None:
    steps = _steps(
        [(1, 5_000, 190), (2, 9_600, 200), (4, 18_000, 210), (8, 18_500, 420), (16, 18_300, 860)]
    )
    lines = analyze_sweep(steps).summary()
    assert lines[0] == "90% of peak IOPS is reached at QD 4 (peak 18,500 IOPS at QD 8)"
    assert lines[1] == "scaling slows from QD 4: QD 8 gave 51% of the IOPS linear scaling predicts"
    assert lines[2] == (
        "full saturation from QD 8: IOPS stop growing (no deeper step adds 10%) "
        "while mean latency rises"
    )


def test_a_peak_at_the_deepest_step_on_a_plateau_is_not_still_rising() -> None:
    a = analyze_sweep(_steps([(1, 1000, 10), (2, 1900, 10), (4, 2000, 20), (8, 2050, 40)]))
    assert a.peak_qd == 8 and not a.still_rising
    assert "still rising" not in a.summary()[0]


def test_the_table_has_the_seeds_columns_and_one_row_per_step() -> None:
    text = sweep_table(_steps([(1, 1234.4, 10.0), (2, 2500, 11.5)]))
    lines = text.splitlines()
    assert lines[0].split() == ["QD", "IOPS", "avg", "lat", "µs", "p99", "µs", "MiB/s", "util", "%"]
    assert lines[1].split()[:2] == ["1", "1,234"]
    assert lines[2].split()[0] == "2"


def _run(value: str, round_no: int, iops: float, dev: int | None = None) -> AbRun:
    return AbRun(round_no, value, value, iops, iops * 4, 1e6 / iops, 2e6 / iops, 1000, dev)


def test_overlapping_ranges_are_no_difference_beyond_noise() -> None:
    runs = [_run("none", 1, 1000), _run("mq-deadline", 1, 1030), _run("none", 2, 1060)]
    runs.append(_run("mq-deadline", 2, 990))
    summaries, comparisons = analyze_ab(["none", "mq-deadline"], runs, "IOPS")
    assert summaries[0].metric == Spread(1030, 1000, 1060)
    assert summaries[1].metric == Spread(1010, 990, 1030)
    assert comparisons[0].verdict == "no difference beyond noise"
    assert comparisons[0].change_pct == pytest.approx(-1.94, abs=0.01)


def test_separate_ranges_give_a_plain_difference() -> None:
    runs = [_run("16", r, 1000 + r) for r in (1, 2, 3)] + [_run("256", r, 1130 + r) for r in (1, 2)]
    _, comparisons = analyze_ab(["16", "256"], runs, "IOPS")
    assert comparisons[0].verdict == "256 gives 13% more IOPS than 16"


def test_one_run_each_is_judged_on_a_5pct_margin_and_says_so() -> None:
    _, close = analyze_ab(["a", "b"], [_run("a", 1, 1000), _run("b", 1, 1040)], "IOPS")
    assert close[0].verdict == "no difference beyond noise"
    _, far = analyze_ab(["a", "b"], [_run("a", 1, 1000), _run("b", 1, 800)], "IOPS")
    assert far[0].verdict.startswith("b gives 20% less IOPS than a")
    assert "one run each" in far[0].verdict


def test_three_values_are_each_compared_with_the_first() -> None:
    runs = [_run(v, 1, i) for v, i in (("0", 100), ("128", 200), ("1024", 400))]
    runs += [_run(v, 2, i + 1) for v, i in (("0", 100), ("128", 200), ("1024", 400))]
    summaries, comparisons = analyze_ab(["0", "128", "1024"], runs, "IOPS")
    assert [s.value for s in summaries] == ["0", "128", "1024"]
    assert [c.value for c in comparisons] == ["128", "1024"]
    assert all(c.baseline == "0" for c in comparisons)


def test_device_ios_are_the_median_and_absent_when_fio_could_not_tell() -> None:
    runs = [_run("0", 1, 100, 900), _run("0", 2, 100, 1100), _run("0", 3, 100, 1000)]
    runs += [_run("1024", 1, 100, None)]
    summaries, _ = analyze_ab(["0", "1024"], runs, "IOPS")
    assert summaries[0].device_ios == 1000
    assert summaries[1].device_ios is None


def test_values_alternate_a_b_a_b() -> None:
    assert ab_order(["a", "b"], 2) == ((1, "a"), (1, "b"), (2, "a"), (2, "b"))


def test_sequential_presets_are_judged_on_bandwidth() -> None:
    assert headline_metric(PRESETS["seqscan"]) == "MiB/s"
    assert headline_metric(PRESETS["randread"]) == "IOPS"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("read_ahead_kb", "expected SETTING=V1,V2"),
        ("read_ahead_kb=16", "at least two values"),
        ("rotational=0,1", "cannot A/B 'rotational'"),
        ("max_sectors_kb=128,256", "not one an A/B compares"),
        ("=1,2", "expected SETTING"),
    ],
)
def test_bad_ab_specs_say_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_ab_spec(text)


def test_an_ab_spec_splits_into_setting_and_values() -> None:
    assert parse_ab_spec("scheduler=none, mq-deadline") == ("scheduler", ("none", "mq-deadline"))


def test_a_step_whose_device_served_more_than_fio_issued_says_other_io_hit_it() -> None:
    """#17 item 8: verdicts must "say when other I/O hit the device during a probe, sweep or
    A/B: the device's own counters show it"."""
    quiet = SweepStep(1, 10_000, 100, 300, 40_000, 50.0, fio_ios=50_000, device_ios=50_010)
    busy = SweepStep(2, 18_000, 110, 330, 72_000, 90.0, fio_ios=90_000, device_ios=120_000)
    lines = analyze_sweep([quiet, busy]).summary()
    other = [line for line in lines if line.startswith("other I/O")]
    assert other == [
        "other I/O hit the device during QD 2: it served 120,000 I/Os, fio issued 90,000 "
        "(+33%); these figures include that load"
    ]


def test_other_io_is_not_claimed_for_merges_buffered_runs_or_a_few_metadata_writes() -> None:
    assert other_io_note("QD 1", 10_000, 8_000, direct=True) is None  # merges: fewer
    assert other_io_note("QD 1", 10_000, 10_090, direct=True) is None  # a few journal writes
    assert other_io_note("QD 1", 10_000, 30_000, direct=False) is None  # read-ahead, buffered
    assert other_io_note("QD 1", 10_000, None, direct=True) is None  # fio could not tell
    assert other_io_note("round 1 (nr_requests=4)", 1_000, 1_500, direct=True) is not None
