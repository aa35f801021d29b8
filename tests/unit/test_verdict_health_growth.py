"""The verdict uses the drive's own health (#26 gap 1): "device reports media errors" (cause
``errors``) when media errors, reallocated or pending sectors or critical-warning bits grew
since this process started; a lifetime count that did not move is not a cause."""

from __future__ import annotations

import dataclasses
import json
import stat
import time
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from iotop_plus.sampling.health.part import HealthFrame, HealthState, HealthWorker, health_from_json
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
from iotop_plus.why.diagnosis import diagnose
from tests.support.wait import holds_within
from tests.unit.test_verdict_line import everything, frame, rates

NVME_JSON = (
    Path(__file__).parent.parent / "fixtures" / "smartctl" / "nvme-media-errors-samsung-970evo.json"
)
INVENTORY = Inventory({"sda": BlockDevice("sda", 8, 0, "disk")})


class Drive:
    """A stand-in smartctl printing a capture of a real NVMe drive that the test edits."""

    def __init__(self, tmp_path: Path) -> None:
        self.doc = json.loads(NVME_JSON.read_text())
        self.json = tmp_path / "smart.json"
        self.bin = tmp_path / "bin"
        self.bin.mkdir(mode=0o700)
        script = self.bin / "smartctl"
        script.write_text(f'#!/bin/sh\ncat "{self.json}"\n')
        script.chmod(stat.S_IRWXU)
        self.set()

    def set(self, **log: int) -> None:
        self.doc["nvme_smart_health_information_log"].update(log)
        self.json.write_text(json.dumps(self.doc))


def _health_until(part: HealthState, ok: Callable[[HealthFrame], object]) -> HealthFrame:
    found: list[HealthFrame] = []

    def ready() -> bool:
        health, _events = part.frame(INVENTORY, time.monotonic())
        found.append(health)
        return bool(ok(health))

    assert holds_within(ready, 15.0)
    return found[-1]


def _errors(health: HealthFrame) -> list[dict[str, object]]:
    verdict = diagnose(frame(rates(reads=200), **everything(health=health)), "sda")
    return [c for c in verdict.as_json() if c["cause"] == "errors"]


def test_media_errors_that_grew_since_start_are_named_by_the_verdict(tmp_path: Path) -> None:
    drive = Drive(tmp_path)
    worker = HealthWorker(Roots(sys=tmp_path / "sys"), refresh_s=0.2, use_smartctl=True)
    part = HealthState(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys"), worker)
    with search_path_override([str(drive.bin)]):
        try:
            first = _health_until(part, lambda h: "sda" in h.readings)
            # 7 media errors when we started: a lifetime count, not a cause of this slowness.
            assert first.readings["sda"].media_errors == 7
            assert _errors(first) == [] and first.grown == {}
            drive.set(media_errors=9)
            grown = _health_until(part, lambda h: h.readings["sda"].media_errors == 9)
        finally:
            part.close()
    assert grown.grown == {"sda": {"media_errors": (7, 9)}}
    [errors] = _errors(grown)
    assert errors["confidence"] == "medium"
    assert errors["text"] == "device reports media errors: media errors 7→9 since start"
    assert errors["evidence"] == {"media_errors": 9, "media_errors_at_start": 7}
    # The recording keeps the growth: a replayed frame gives the same verdict.
    again = health_from_json(json.loads(json.dumps(grown.as_json())))
    assert again is not None and _errors(again) == [errors]


def test_a_critical_warning_present_from_the_start_is_not_a_new_cause(tmp_path: Path) -> None:
    drive = Drive(tmp_path)
    drive.set(critical_warning=0x04)  # reliability degraded, long before we started
    worker = HealthWorker(Roots(sys=tmp_path / "sys"), refresh_s=0.2, use_smartctl=True)
    part = HealthState(Roots(proc=tmp_path / "proc", sys=tmp_path / "sys"), worker)
    with search_path_override([str(drive.bin)]):
        try:
            first = _health_until(part, lambda h: "sda" in h.readings)
            assert first.readings["sda"].critical_warning == 0x04
            assert _errors(first) == []
            drive.set(critical_warning=0x05)  # a new bit: spare below its threshold
            later = _health_until(part, lambda h: h.readings["sda"].critical_warning == 0x05)
        finally:
            part.close()
    [errors] = _errors(later)
    assert errors["text"] == "device reports media errors: critical warning 0x04→0x05 since start"


def test_failed_requests_and_grown_figures_make_one_errors_cause() -> None:
    health = HealthFrame(
        MappingProxyType({}),
        MappingProxyType({}),
        MappingProxyType({"sda": 5}),
        new_errors=MappingProxyType({"sda": 2}),
        grown=MappingProxyType({"sda": MappingProxyType({"pending_sectors": (0, 8)})}),
    )
    [errors] = _errors(health)
    assert errors["confidence"] == "high"
    assert errors["text"] == (
        "2 failed I/O requests; device reports media errors: pending 0→8 since start"
    )


def test_the_device_tab_says_which_figures_grew_under_the_health_line() -> None:
    from iotop_plus.sampling.health.smart import DeviceHealth
    from iotop_plus.tui.health_lines import health_facts

    health = HealthFrame(
        MappingProxyType({"sda": DeviceHealth("smartctl", passed=True, media_errors=9)}),
        MappingProxyType({"sda": 30.0}),
        None,
        grown=MappingProxyType({"sda": MappingProxyType({"media_errors": (7, 9)})}),
    )
    facts = health_facts("sda", frame(rates(reads=200), **everything(health=health)))
    assert ("health grew", "media errors 7→9 since start") in facts
    quiet = dataclasses.replace(health, grown=MappingProxyType({}))
    assert all(k != "health grew" for k, _ in health_facts("sda", frame(None, health=quiet)))
