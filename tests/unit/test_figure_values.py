"""figure_values: a column of figures worked out at once is the properties', bit for bit."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from iotop_plus.sampling.disks.diskstats import MS_WRAP
from iotop_plus.sampling.disks.rates import COLUMNS, DeviceRates, FigureColumns, figure_values
from tests.support.budget import examples

# Small counts so that zero I/Os (the 0.0 of await and req-sz) and zero merges come up often;
# ms counters near 2**32 so that the 32-bit wrap does too.
_delta = st.integers(min_value=0, max_value=3)
_big = st.integers(min_value=0, max_value=10**7)


@st.composite
def _device(draw: st.DrawFn) -> DeviceRates:
    before = [draw(st.one_of(_big, st.just(MS_WRAP - 1))) for _ in range(17)]
    after = [b + draw(st.one_of(_delta, _big)) for b in before]
    elapsed = draw(st.sampled_from([1.0, 0.25, 1.0003, 0.9999999, 3.0]))
    return DeviceRates(tuple(before), tuple(after), elapsed)


def _bits(value: float) -> tuple[type, bytes]:
    return type(value), struct.pack("<d", value)


@settings(max_examples=examples(100))
@given(st.lists(_device(), max_size=20))
def test_every_figure_of_a_column_is_the_propertys(rates: list[DeviceRates]) -> None:
    for key in (*COLUMNS, "iops", "kb_s"):
        expected = [_bits(getattr(r, key)) for r in rates]
        assert [_bits(v) for v in figure_values(rates, key)] == expected, key


def test_no_io_gives_zero_await_and_size_as_the_properties_do() -> None:
    idle = DeviceRates((5,) * 17, (5,) * 8 + (2,) + (9,) * 8, 1.0)  # ms moved, no I/O done
    for key in ("r_await", "w_await", "rareq_sz", "rrqm_pct", "in_flight"):
        assert figure_values([idle], key) == [getattr(idle, key)], key


_FIGURES = [k for k in COLUMNS if k != "in_flight"]


@settings(max_examples=examples(100))
@given(
    st.lists(_device(), max_size=20),
    st.sampled_from([float("inf"), 9_999.995, 99_999.95, 50.0, 0.5]),
    st.booleans(),
)
def test_top_is_the_largest_figure_or_a_bound_below_enough(
    rates: list[DeviceRates], enough: float, one_interval: bool
) -> None:
    """The table fits a format to ``top``: below ``enough`` any bound gives the same one."""
    if one_interval:  # one frame's rates share their interval
        rates = [DeviceRates(r.before, r.after, 1.0003) for r in rates]
    columns = FigureColumns(rates)
    for key in _FIGURES:
        largest = max((getattr(r, key) for r in rates), default=0.0)
        top = columns.top(key, enough)
        if largest < enough:
            assert largest <= top < enough, key
        else:
            assert _bits(top) == _bits(largest), key
    for key in _FIGURES:  # and exactly, when no bound is enough
        largest = max((getattr(r, key) for r in rates), default=0.0)
        assert _bits(FigureColumns(rates).top(key)) == _bits(largest), key
