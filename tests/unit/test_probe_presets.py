"""Presets and the parameters a user may edit."""

from __future__ import annotations

import pytest

from iotop_plus.probe.presets import (
    EDITABLE,
    PRESETS,
    parse_assignments,
    parse_size,
    with_overrides,
)


def test_the_six_presets_carry_the_seed_patterns_and_a_rationale() -> None:
    shapes = {
        name: (p.rw, p.params.bs, p.params.numjobs, p.params.iodepth, p.fsync, p.rwmixread)
        for name, p in PRESETS.items()
    }
    assert shapes == {
        "wal": ("write", "8k", 1, 1, 1, None),
        "index": ("randread", "8k", 8, 4, 0, None),
        "seqscan": ("read", "256k", 2, 16, 0, None),
        "mixed": ("randrw", "8k", 8, 4, 0, 70),
        "randread": ("randread", "4k", 1, 32, 0, None),
        "throughput": ("rw", "1m", 1, 32, 0, 50),
    }
    for preset in PRESETS.values():
        assert len(preset.rationale) > 60
        assert preset.params.runtime_s == 10 and preset.params.is_quick
        assert preset.params.ioengine == "io_uring"
    assert {p.name for p in PRESETS.values() if not p.writes} == {"index", "seqscan", "randread"}
    assert PRESETS["index"].pattern == "8k randread, 8 jobs x QD4"
    assert PRESETS["mixed"].pattern == "8k randrw 70/30, 8 jobs x QD4"


def test_every_editable_parameter_can_be_set() -> None:
    params = with_overrides(
        PRESETS["randread"].params,
        {
            "bs": "16K",
            "iodepth": "8",
            "numjobs": "2",
            "runtime": "3",
            "size": "64",
            "direct": "0",
            "ioengine": "libaio",
        },
    )
    assert (params.bs, params.bs_bytes, params.iodepth, params.numjobs) == ("16k", 16384, 8, 2)
    assert (params.runtime_s, params.size_mb, params.direct, params.ioengine) == (
        3,
        64,
        False,
        "libaio",
    )
    assert params.total_qd == 16
    assert set(EDITABLE) == {"bs", "iodepth", "numjobs", "runtime", "size", "direct", "ioengine"}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("bs", "4q", "not a block size"),
        ("bs", "100", "multiple of 512"),
        ("bs", "128m", "multiple of 512"),
        ("iodepth", "0", "from 1 to 1024"),
        ("iodepth", "x", "not a whole number"),
        ("numjobs", "65", "from 1 to 64"),
        ("runtime", "-1", "from 1 to 3600"),
        ("direct", "maybe", "must be 1 or 0"),
        ("ioengine", "io uring; rm", "not an engine name"),
        ("rw", "write", "unknown parameter 'rw'"),
    ],
)
def test_bad_edits_are_refused_with_one_line(key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        with_overrides(PRESETS["wal"].params, {key: value})
    assert "\n" not in str(info.value)


def test_assignments_and_sizes() -> None:
    assert parse_assignments(["bs=4k", " iodepth =8"]) == {"bs": "4k", "iodepth": "8"}
    assert parse_assignments(["bs=4k"]) == {"bs": "4k"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_assignments(["bs"])
    assert parse_size("1m") == 1024 * 1024
    assert parse_size("512") == 512
