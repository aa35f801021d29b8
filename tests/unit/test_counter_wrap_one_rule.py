"""One wrap and reset rule for the kernel's disk counters, the same in every consumer.

The kernel's millisecond counters are 32-bit and wrap every 49.7 days; a count that falls means
the device was re-created. The rates, the exporter, the recording's roll-ups and the probe
runner's ``disk_util`` each meet the same two cases here and must agree on them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iotop_plus.export.counters import MonotonicDisks
from iotop_plus.probe.device_reads import with_disk_util
from iotop_plus.probe.target import ProbeTarget
from iotop_plus.record.chunks import Rollup
from iotop_plus.record.format import counters_columns
from iotop_plus.sampling.disks.diskstats import (
    MS_FIELDS,
    MS_WRAP,
    READS,
    SECTORS_WRITTEN,
    WRITES,
    DiskCounters,
    counter_deltas,
)
from iotop_plus.sampling.disks.rates import compute_rates

ELAPSED_S = 2.0


def _counters(values: dict[int, int]) -> DiskCounters:
    v = [1000] * 17
    for i, x in values.items():
        v[i] = x
    return DiskCounters(7, 3, "loop3", tuple(v), 17)


# The ms counters wrap: each rises by ``ms`` across 2^32 while 40 reads and 60 writes complete.
WRAP_BEFORE = _counters({i: MS_WRAP - 300 for i in MS_FIELDS} | {READS: 5000, WRITES: 9000})
WRAP_AFTER = _counters({i: 200 for i in MS_FIELDS} | {READS: 5040, WRITES: 9060})
WRAP_MS = 500


def _after_wrap(values: dict[int, int]) -> DiskCounters:
    v = list(WRAP_AFTER.values)
    for i, x in values.items():
        v[i] = x
    return WRAP_AFTER._replace(values=tuple(v))


RESETS = {
    # The device was re-created: every counter starts again near zero.
    "re-created": (WRAP_AFTER, _after_wrap(dict.fromkeys(range(17), 3))),
    # Only the written sectors fell (the reads and writes did not): still a reset.
    "sectors written fell": (WRAP_AFTER, _after_wrap({SECTORS_WRITTEN: 10})),
}


def test_the_rule_takes_ms_deltas_modulo_2_32_and_gives_none_after_a_reset() -> None:
    deltas = counter_deltas(WRAP_BEFORE, WRAP_AFTER)
    assert deltas is not None
    assert [deltas[i] for i in MS_FIELDS] == [WRAP_MS] * len(MS_FIELDS)
    assert (deltas[READS], deltas[WRITES]) == (40, 60)
    for before, after in RESETS.values():
        assert counter_deltas(before, after) is None


def test_rates_across_a_32_bit_wrap() -> None:
    rates = compute_rates(WRAP_BEFORE, WRAP_AFTER, ELAPSED_S)
    assert rates is not None
    assert rates.util == pytest.approx(WRAP_MS / ELAPSED_S / 10)
    assert rates.r_await == pytest.approx(WRAP_MS / 40)
    assert rates.aqu_sz == pytest.approx(WRAP_MS / ELAPSED_S / 1000)


@pytest.mark.parametrize("case", sorted(RESETS))
def test_rates_after_a_reset_are_none(case: str) -> None:
    before, after = RESETS[case]
    assert compute_rates(before, after, ELAPSED_S) is None


def test_exporter_counters_keep_rising_across_a_32_bit_wrap() -> None:
    disks = MonotonicDisks()
    disks.update({"loop3": WRAP_BEFORE})
    disks.update({"loop3": WRAP_AFTER})
    exported = disks.values("loop3", WRAP_AFTER)
    for i in MS_FIELDS:
        assert exported[i] == WRAP_BEFORE.values[i] + WRAP_MS
    assert exported[READS] == WRAP_AFTER.values[READS]


@pytest.mark.parametrize("case", sorted(RESETS))
def test_exporter_starts_again_from_the_kernel_after_a_reset(case: str) -> None:
    before, after = RESETS[case]
    disks = MonotonicDisks()
    # A wrap first, so that the reset has an offset to drop.
    disks.update({"loop3": WRAP_BEFORE})
    disks.update({"loop3": before})
    disks.update({"loop3": after})
    assert disks.values("loop3", after) == after.values


def _rollup(before: DiskCounters, after: DiskCounters) -> dict[str, dict[str, list[float]]]:
    rollup = Rollup(("loop3",))
    rollup.add(counters_columns([after]), counters_columns([before]), ELAPSED_S)
    return rollup.as_json()


def test_rollup_keeps_a_minutes_await_and_util_across_a_32_bit_wrap() -> None:
    doc = _rollup(WRAP_BEFORE, WRAP_AFTER)
    assert doc["util"]["mean"] == [pytest.approx(WRAP_MS / ELAPSED_S / 10, rel=1e-3)]
    # await is read plus write ms over reads plus writes, as iostat's await.
    assert doc["await"]["mean"] == [pytest.approx(2 * WRAP_MS / 100, rel=1e-3)]
    assert doc["aqu"]["mean"] == [pytest.approx(WRAP_MS / ELAPSED_S / 1000, rel=1e-3)]
    assert doc["iops"]["mean"] == [pytest.approx(100 / ELAPSED_S, rel=1e-3)]


@pytest.mark.parametrize("case", sorted(RESETS))
def test_rollup_adds_nothing_for_a_reset_interval(case: str) -> None:
    before, after = RESETS[case]
    doc = _rollup(before, after)
    for metric in ("iops", "mbps", "await", "util", "aqu"):
        assert doc[metric]["max"] == [0.0], metric


DEVICE = ProbeTarget("device", None, Path("/dev/loop3"), "loop3", 1 << 20, True)


def test_probe_disk_util_across_a_32_bit_wrap() -> None:
    _, doc = with_disk_util("{}", {}, DEVICE, (10.0, WRAP_BEFORE), (10.0 + ELAPSED_S, WRAP_AFTER))
    (util,) = doc["disk_util"]
    assert util["util"] == pytest.approx(WRAP_MS * 100 / (ELAPSED_S * 1000))
    assert (util["read_ticks"], util["write_ticks"], util["in_queue"]) == (WRAP_MS,) * 3
    assert (util["read_ios"], util["write_ios"]) == (40, 60)


@pytest.mark.parametrize("case", sorted(RESETS))
def test_probe_gives_no_disk_util_after_a_reset(case: str) -> None:
    before, after = RESETS[case]
    raw, doc = with_disk_util("{}", {}, DEVICE, (10.0, before), (10.0 + ELAPSED_S, after))
    assert "disk_util" not in doc
    assert raw == "{}"
