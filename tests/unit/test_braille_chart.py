"""The pure parts of the braille charts: round ticks, gaps, dots."""

from __future__ import annotations

from iotop_plus.text import si_number
from iotop_plus.tui.widgets.braille_raster import raster
from iotop_plus.tui.widgets.chart_scale import columns, nice_ticks, y_axis_for
from iotop_plus.tui.widgets.charts import joins


def test_ticks_are_1_2_5_steps_from_zero_covering_the_top() -> None:
    # At most max_ticks intervals: 201.6 over 4 needs a step of 100 (50 would make 5).
    assert nice_ticks(201.6, 4) == (300.0, [0.0, 100.0, 200.0, 300.0])
    assert nice_ticks(201.6, 5) == (250.0, [0.0, 50.0, 100.0, 150.0, 200.0, 250.0])
    assert nice_ticks(6450.7, 4) == (8000.0, [0.0, 2000.0, 4000.0, 6000.0, 8000.0])
    assert nice_ticks(0.0, 4) == (1.0, [0.0, 0.5, 1.0])  # an idle device: 0..1
    top, ticks = nice_ticks(0.33, 3)
    assert [round(t, 9) for t in ticks] == [0.0, 0.2, 0.4] and round(top, 9) == 0.4


def test_tick_labels_carry_units() -> None:
    assert si_number(2500.0) == "2.5k" and si_number(2e6) == "2M"
    assert y_axis_for("kib", 5000.0).unit == "MiB/s"
    assert y_axis_for("kib", 500.0).unit == "KiB/s"
    assert y_axis_for("ms", 3.0).unit == "ms"


def test_a_gap_in_the_samples_is_not_bridged() -> None:
    times = [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]
    assert joins(times) == [False, True, True, False, True, True]
    # An interval change (5 s then 1 s) is not a gap.
    assert joins([0.0, 5.0, 10.0, 11.0, 12.0]) == [False, True, True, True, True]
    cols = [0, 1, 2, 10, 11, 12]
    bits = raster(columns(cols, joins(times)), [1.0] * 6, lambda v: 0, 8, 1)
    assert bits[2] == 0 and bits[3] == 0  # cells 2..4 (dot columns 4..9) stay empty
    assert bits[0] and bits[5]
