"""The device table's columns and colour thresholds, apart from the widget."""

from __future__ import annotations

from iotop_plus.config import Config
from iotop_plus.sampling.figures import FIGURES
from iotop_plus.tui.widgets.table_columns import (
    BAD,
    COLUMN_SETS,
    DIM,
    EXTENDED_PRIORITY,
    NOT_SATURATION_MARK,
    PLAIN,
    WARN,
    cell,
    format_value,
)


def _col(key: str):
    return next(c for c in COLUMN_SETS["extended"] if c.key == key)


def test_column_sets_follow_the_registry() -> None:
    assert [c.key for c in COLUMN_SETS["extended"]] == [f.key for f in FIGURES]
    assert sorted(EXTENDED_PRIORITY) == sorted(f.key for f in FIGURES)
    assert {c.key for c in COLUMN_SETS["basic"]} <= {f.key for f in FIGURES}
    # Titles wider than 7 characters get a wider column, so a space always separates them.
    assert {c.key: c.width for c in COLUMN_SETS["extended"] if c.width != 8} == {
        "rareq_sz": 9,
        "wareq_sz": 9,
        "dareq_sz": 9,
        "in_flight": 9,
    }


def test_colour_thresholds() -> None:
    cfg = Config()
    r_await = _col("r_await")
    assert cell(r_await, 1.0, False, None, cfg) == ("1.00", PLAIN)
    assert cell(r_await, cfg.await_warn_ms_solid, False, None, cfg)[1] == WARN
    assert cell(r_await, cfg.await_bad_ms_solid, False, None, cfg)[1] == BAD
    # A spinning disk is allowed more before it turns yellow.
    assert cell(r_await, cfg.await_warn_ms_solid, True, None, cfg)[1] == PLAIN
    aqu = _col("aqu_sz")
    assert cell(aqu, 0.8 * 64, False, 64, cfg)[1] == BAD
    assert cell(aqu, 10.0, False, 64, cfg)[1] == PLAIN
    util = _col("util")
    assert cell(util, 100.0, False, None, cfg) == ("100.00" + NOT_SATURATION_MARK, DIM)
    assert cell(util, 95.0, True, None, cfg) == ("95.00", BAD)
    assert cell(_col("in_flight"), 3, None, None, cfg) == ("3", PLAIN)
    assert format_value(123_456.0) == "123k"
