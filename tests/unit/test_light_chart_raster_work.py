"""#25: the braille raster does the work the picture needs, and no more.

At 1 s with the window of a few minutes most dot columns hold one point; such a column is
one row of the plot, so each point is scaled to a row once (it had been scaled four times:
first, last, highest and lowest of its column). Counted through the scaling function, never
through time; the picture is the same (checked against a column's whole range).
"""

from __future__ import annotations

from collections.abc import Callable

from iotop_plus.tui.widgets.braille_raster import raster
from iotop_plus.tui.widgets.chart_scale import columns


def counting_row(bottom: int, scale: float) -> tuple[list[float], Callable[[float], int]]:
    """A value-to-row scaling that records every value it scales."""
    seen: list[float] = []

    def to_row(v: float) -> int:
        seen.append(v)
        return min(bottom, max(0, bottom - int(v * scale + 0.5)))

    return seen, to_row


def test_a_column_of_one_point_scales_it_to_a_row_once() -> None:
    values = [float(v) for v in (0, 3, 7, 2, 9, 9, 1, 5)]
    runs = columns(list(range(len(values))), [False] + [True] * (len(values) - 1))
    seen, to_row = counting_row(15, 1.5)
    bits = raster(runs, values, to_row, 4, 4)
    assert seen == values
    assert any(bits)


def test_a_column_of_many_points_still_shows_its_whole_range() -> None:
    values = [1.0, 9.0, 0.0, 4.0]  # one dot column: first 1, highest 9, lowest 0, last 4
    runs = columns([0, 0, 0, 0], [False, True, True, True])
    _, to_row = counting_row(15, 1.5)
    bits = raster(runs, values, to_row, 1, 4)
    rows = {y for y in range(16) if bits[y >> 2] & (0x01, 0x02, 0x04, 0x40)[y & 3]}
    assert rows == set(range(to_row(9.0), to_row(0.0) + 1))
