"""The charts' shortest x axis: two minutes, or 30 intervals when they are longer, never more
than the history's window."""

from __future__ import annotations

import pytest

from iotop_plus.tui.widgets.charts import min_span


@pytest.mark.parametrize(
    ("interval", "window", "shortest"),
    [
        (1.0, 600.0, 120.0),  # two minutes at the default interval
        (0.25, 150.0, 120.0),
        (10.0, 6000.0, 300.0),  # 30 intervals once they are longer than two minutes
        (0.1, 60.0, 60.0),  # never more than the history holds
    ],
)
def test_the_shortest_x_axis(interval: float, window: float, shortest: float) -> None:
    assert min_span(interval, window) == shortest
