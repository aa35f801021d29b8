"""#25, recorder CPU at 60 devices: what each sample costs, cut where the profile showed it.

A profile of ``record -i 1`` on a host with ~70 devices and ~120 processes showed, besides
reading counters: the ``H`` document of all devices' health encoded every sample only to find
it unchanged, ``/proc/PID/stat`` read whole for every process whose ``io`` text moved (most
only in their character counters), and rates worked out field by field for idle processes.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.recorded_health import HEALTH, HealthParts
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.health.smart import DeviceHealth
from tests.support.synthetic import SyntheticTree


def _frames(tmp_path: Path, n_devices: int, count: int) -> list[Frame]:
    tree = SyntheticTree(tmp_path / "tree", n_devices)
    source = LiveSource(tree.roots)
    try:
        frames = []
        for _ in range(count):
            tree.advance(1.0)
            frames.append(source.next_frame())
        return frames
    finally:
        source.close()


def _health(readings: dict[str, DeviceHealth], age: float) -> HealthFrame:
    return HealthFrame(
        MappingProxyType(readings),
        MappingProxyType(dict.fromkeys(readings, age)),
        MappingProxyType({}),
        "kmsg",
    )


def test_unchanged_health_is_not_encoded_every_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = _frames(tmp_path, 60, 3)
    names = sorted(frames[0].sample.counters)
    readings = {n: DeviceHealth("sysfs", temperature_c=40) for n in names}
    encoded: list[int] = []
    as_json = HealthFrame.as_json

    def counting(self: HealthFrame) -> dict[str, Any]:
        encoded.append(1)
        return as_json(self)

    monkeypatch.setattr(HealthFrame, "as_json", counting)
    parts = HealthParts()
    wall = 1_700_000_040.0  # 20 s before a minute starts: all samples in one chunk
    written = []
    for i in range(10):
        # The readings stay.
        rs = _add_health(parts, frames[-1], wall + i, readings, age=float(i))
        written.append(HEALTH in rs.parts)
    assert written == [True] + [False] * 9  # the first of the file, then nothing changed
    assert len(encoded) == 1  # was 10: 60 devices' document built each sample to compare


def _add_health(
    parts: HealthParts, last: Frame, wall: float, readings: dict[str, DeviceHealth], age: float
) -> RecordedSample:
    """Record ``last`` again at ``wall`` with a health part of its own (the ages move)."""
    frame = dataclasses.replace(
        last,
        sample=dataclasses.replace(last.sample, wall_time=wall),
        parts={"health": _health(dict(readings), age=age)},
        inventory_changed=False,
    )
    return parts.add(RecordedSample(frame.sample), frame, 1, True)


def test_a_new_reading_is_still_written_at_once(tmp_path: Path) -> None:
    frames = _frames(tmp_path, 4, 2)
    names = sorted(frames[0].sample.counters)
    readings = {n: DeviceHealth("sysfs", temperature_c=40) for n in names}
    parts = HealthParts()
    wall = 1_700_000_040.0
    seen = []
    for i in range(6):
        if i == 3:  # the worker read one device again and its figure moved
            readings = {**readings, names[0]: DeviceHealth("sysfs", temperature_c=41)}
        if i == 5:  # read again with the same figures: a new object, nothing to write
            readings = {**readings, names[1]: DeviceHealth("sysfs", temperature_c=40)}
        rs = _add_health(parts, frames[-1], wall + i, readings, age=float(i))
        doc = rs.parts.get(HEALTH)
        seen.append(None if doc is None else doc["devices"][names[0]]["temperature_c"])
    assert seen == [40, None, None, 41, None, None]


def test_idle_processes_get_zero_rates_without_working_them_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from iotop_plus.sampling.processes import rates as processes
    from iotop_plus.sampling.processes.reader import ProcessReader

    with ProcessReader() as reader:
        first = reader.sample()
        second = reader.sample()
    idle = [k for k, t in second.tasks.items() if first.tasks.get(k) is t]
    assert idle  # on any host most processes did nothing in between
    worked: list[int] = []
    real = processes.task_rates

    def counting(*args: Any, **kwargs: Any) -> processes.TaskRates:
        worked.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(processes, "task_rates", counting)
    rates = processes.rates_between(first, second)
    # A task credited with a child that was reaped in between (its parent, or the first
    # ancestor still listed when the parent went too: a shell and its dd) is worked out.
    reaped = processes._reaped_children(first.tasks, second.tasks)
    credited = sum(1 for k in idle if second.tasks[k].pid in reaped)
    assert len(worked) <= len(second.tasks) - len(idle) + credited + 1  # was every task
    elapsed = second.monotonic - first.monotonic
    measured = first.delayacct.measurable and second.delayacct.measurable
    for key in idle:
        task = second.tasks[key]
        if task.pid in reaped:
            continue
        assert rates[key] == real(task, task, elapsed, delay_measured=measured)


def test_the_minute_rollups_take_deltas_by_column_with_the_same_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    from iotop_plus.record import chunks
    from iotop_plus.sampling.disks.diskstats import MS_WRAP, N_COUNTERS, value_deltas

    rng = random.Random(25)
    n = 60
    samples = [[[rng.randrange(10**6, 10**9) for _ in range(n)] for _ in range(N_COUNTERS)]]
    for step in range(8):
        cols = [list(c) for c in samples[-1]]
        for k in range(N_COUNTERS):
            cols[k] = [v + rng.randrange(0, 5000) for v in cols[k]]
        cols[3][1] = (cols[3][1] + MS_WRAP - 7) % MS_WRAP  # a ms counter wraps at 2^32
        if step == 4:
            cols[0][2] = 5  # a device re-created: its reads fall
        samples.append(cols)
    per_device: list[int] = []

    def counting(before: Any, after: Any) -> Any:
        per_device.append(1)
        return value_deltas(before, after)

    monkeypatch.setattr(chunks, "value_deltas", counting, raising=False)
    names = tuple(f"d{i}" for i in range(n))
    rollup = chunks.Rollup(names)
    for prev, cur in itertools.pairwise(samples):
        rollup.add(cur, prev, 1.0)
    assert per_device == []  # was one call per device per sample
    # The same figures as the rule applied device by device.
    want = {"ios": [0.0] * n, "ms": [0.0] * n, "ticks": [0.0] * n}
    for prev, cur in itertools.pairwise(samples):
        for d in range(n):
            deltas = value_deltas([c[d] for c in prev], [c[d] for c in cur]) or (0,) * 17
            want["ios"][d] += deltas[0] + deltas[4]
            want["ms"][d] += deltas[3] + deltas[7]
            want["ticks"][d] += deltas[9]
    for key, values in want.items():
        assert rollup.sums[key] == values
    assert rollup.sums["ios"][2] < rollup.sums["ios"][3]  # the reset interval added nothing
