"""Sorting the device table by a figure: the keys worked out a column at a time order the
rows as the figures themselves do, devices without rates (-1) last when busiest first."""

from __future__ import annotations

import random

from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.tui.widgets.device_rows import figure_sort_keys
from iotop_plus.tui.widgets.table_columns import COLUMN_SETS


def _rates(rng: random.Random) -> DeviceRates | None:
    if rng.random() < 0.2:
        return None  # a new or reset device: no figures this frame
    before = tuple(rng.randrange(10**6) for _ in range(17))
    after = tuple(b + rng.choice((0, 1, rng.randrange(10_000))) for b in before)
    return DeviceRates(before, after, 1.0003)


def test_every_figure_column_sorts_as_its_figures() -> None:
    rng = random.Random(11)
    rates = {f"sd{i}": _rates(rng) for i in range(300)}
    names = list(rates)
    for column in COLUMN_SETS["extended"]:
        key = column.key
        keys = figure_sort_keys(names, rates, None, key)
        for name, r in rates.items():
            assert keys(name) == ((float(getattr(r, key)),) if r is not None else (-1.0,))
        by_figure = sorted(names, key=lambda n: getattr(rates[n], key, -1.0), reverse=True)
        assert sorted(names, key=keys, reverse=True) == by_figure, key


def test_latency_columns_sort_by_their_shown_figure() -> None:
    """No tracer yet: every latency cell reads "-", so every row sorts as having none."""
    keys = figure_sort_keys(["sda", "sdb"], {"sda": None, "sdb": None}, None, "r_p99")
    assert keys("sda") == keys("sdb") == (-1.0,)
