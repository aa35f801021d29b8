"""#25: the history ring pickles a frame's health part again only when it changed.

A device's reading is the same object from frame to frame until the worker reads it again,
and the ring leaves the ages out, so the part is mostly the very same; pickling it every frame
was ~0.2 ms at 200 devices. The memo must give exactly what a fresh pickle gives, and pickle
again as soon as anything in the part differs.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.sampling.store import packed_parts
from iotop_plus.sampling.store.packed_parts import HealthPickle, dumped


def _health(readings: dict[str, DeviceHealth], **changes: object) -> HealthFrame:
    part = HealthFrame(MappingProxyType(readings), None, None)  # type: ignore[arg-type]
    return dataclasses.replace(part, **changes)  # type: ignore[arg-type]


@pytest.fixture
def pickles(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The values packed_parts pickles afresh."""
    made: list[object] = []

    def counting(value: object) -> bytes:
        made.append(value)
        return dumped(value)

    monkeypatch.setattr(packed_parts, "dumped", counting)
    return made


def test_the_same_readings_are_not_pickled_again(pickles: list[object]) -> None:
    readings = {f"sd{c}": DeviceHealth("sysfs", temperature_c=40) for c in "abc"}
    memo = HealthPickle()
    got = [memo.dumped(_health(dict(readings))) for _ in range(5)]  # a new mapping each frame
    assert len(pickles) == 1
    assert got == [dumped(_health(readings))] * 5


@pytest.mark.parametrize(
    "change",
    [
        "a new reading of one device",
        "an equal reading read again",
        "a device gone",
        "a device added",
        "the order of the devices",
        "an error counted",
        "new errors",
        "errors grown",
        "a problem",
        "ages kept",
    ],
)
def test_any_change_is_pickled_afresh(change: str, pickles: list[object]) -> None:
    readings = {f"sd{c}": DeviceHealth("sysfs", temperature_c=40) for c in "abc"}
    changed = dict(readings)
    fields: dict[str, object] = {}
    if change == "a new reading of one device":
        changed["sdb"] = DeviceHealth("sysfs", temperature_c=41)
    elif change == "an equal reading read again":
        changed["sdb"] = DeviceHealth("sysfs", temperature_c=40)  # equal, not the same object
    elif change == "a device gone":
        del changed["sdc"]
    elif change == "a device added":
        changed["sdd"] = DeviceHealth("sysfs")
    elif change == "the order of the devices":
        changed = dict(reversed(list(readings.items())))
    elif change == "an error counted":
        fields = {"io_errors": MappingProxyType({"sda": 1}), "io_error_source": "kmsg"}
    elif change == "new errors":
        fields = {"new_errors": MappingProxyType({"sda": 1})}
    elif change == "errors grown":
        fields = {"grown": MappingProxyType({"sda": MappingProxyType({"media_errors": (0, 1)})})}
    elif change == "a problem":
        fields = {"problem": "cannot read /dev/kmsg"}
    elif change == "ages kept":
        fields = {"age_s": MappingProxyType(dict.fromkeys(readings, 3.0))}
    memo = HealthPickle()
    memo.dumped(_health(readings))
    after = _health(changed, **fields)
    assert memo.dumped(after) == dumped(after)
    assert len(pickles) == 2
