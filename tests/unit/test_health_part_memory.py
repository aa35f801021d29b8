"""What the health part keeps: the frame store holds every frame's health for its whole window
(an hour of frames at 0.25 s is 14,400), so a frame's health holds its own time only and shares
its maps with the frames before; the part's state stays as big as the devices there are now,
however many came and went."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.health.part import HealthFrame, HealthState, HealthWorker
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
from tests.support.wait import holds_within

NO_HEALTH = "loop: no health of its own"


class Worker:
    """The health worker's side the part uses, with readings set by the test."""

    failure: str | None = None

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}
        self.now: Mapping[str, DeviceHealth] = {}

    def watch(self, kinds: Mapping[str, str]) -> None:
        self.kinds = dict(kinds)

    def readings(self) -> Mapping[str, DeviceHealth]:
        return self.now

    def close(self) -> None:
        pass


class QuietLog:
    """A kernel log that logs nothing (the errors are counted: the part shares the counts)."""

    problem: str | None = None

    def read(self) -> list[object]:
        return []

    def close(self) -> None:
        pass


def _state(tmp_path: Path, worker: Worker) -> HealthState:
    part = HealthState(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys"), worker)  # type: ignore[arg-type]
    part.kmsg = QuietLog()  # type: ignore[assignment]
    return part


def _inventory(names: list[str]) -> Inventory:
    return Inventory({n: BlockDevice(n, 7, i, "loop") for i, n in enumerate(names)})


def test_a_frames_health_holds_its_time_and_shares_the_rest(tmp_path: Path) -> None:
    names = [f"loop{i}" for i in range(60)]
    worker = Worker()
    worker.now = {
        n: DeviceHealth("none", NO_HEALTH, read_monotonic=100.0 + i) for i, n in enumerate(names)
    }
    part = _state(tmp_path, worker)
    inventory = _inventory(names)
    first, _ = part.frame(inventory, 1000.0)
    kept: list[HealthFrame] = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(1000):
            kept.append(part.frame(inventory, 1000.25 + k * 0.25)[0])
        gc.collect()
        per_frame = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    # A map of its own per frame was ~5 KB at 60 devices (readings, ages, counts, growth).
    assert per_frame < 1_000, f"{per_frame:.0f} B a frame"
    last = kept[-1]
    assert last.readings is first.readings and last.io_errors is first.io_errors
    assert last.grown is first.grown and last.new_errors is first.new_errors
    assert dict(last.age_s) == {n: 1000.25 + 999 * 0.25 - (100.0 + i) for i, n in enumerate(names)}
    assert last.age_s["loop0"] == pytest.approx(1150.0)
    assert last.as_json()["devices"]["loop59"]["age_s"] == pytest.approx(1091.0)


def test_devices_that_come_and_go_leave_nothing_behind(tmp_path: Path) -> None:
    worker = Worker()
    part = _state(tmp_path, worker)
    disk = DeviceHealth("smartctl", media_errors=3, passed=True)
    for i in range(1000):
        name = f"loop{1000 + i}"
        worker.now = {"sda": disk, name: DeviceHealth("none", NO_HEALTH)}
        part.frame(_inventory(["sda", name]), float(i))
    assert set(part.first_figures) <= {"sda", "loop1999"}
    assert set(part._grown) == {"sda", "loop1999"}
    # A disk that drops off keeps its baseline: back with more errors, they grew.
    worker.now = {}
    part.frame(_inventory([]), 1000.0)
    assert set(part.first_figures) == {"sda"}
    worker.now = {"sda": DeviceHealth("smartctl", media_errors=5, passed=True)}
    health, _ = part.frame(_inventory(["sda"]), 1001.0)
    assert dict(health.grown["sda"]) == {"media_errors": (3, 5)}


def test_the_workers_readings_are_one_map_until_a_device_is_read_again(tmp_path: Path) -> None:
    reads: list[str] = []

    def reader(_roots: Roots, name: str, _kind: str, **_kw: object) -> DeviceHealth:
        reads.append(name)
        return DeviceHealth("sysfs", read_monotonic=time.monotonic())

    worker = HealthWorker(Roots(sys=tmp_path / "sys"), refresh_s=3600.0, reader=reader)
    try:
        worker.watch({"sda": "disk"})
        assert holds_within(lambda: "sda" in worker.readings(), 10.0)
        one = worker.readings()
        assert worker.readings() is one
        with pytest.raises(TypeError):
            one["sdb"] = DeviceHealth("none")  # type: ignore[index]
        worker.watch({"sda": "disk", "sdb": "disk"})
        assert holds_within(lambda: "sdb" in worker.readings(), 10.0)
        assert worker.readings() is not one and "sdb" not in one
    finally:
        worker.close()
