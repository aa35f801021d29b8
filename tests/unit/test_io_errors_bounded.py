"""The I/O-error counter keeps only the inventory's devices: the kernel log names whatever it
likes, and every name it ever mentioned was kept for ever (a 2-minute flood naming new
devices grew the TUI by 6 MB, steadily)."""

from __future__ import annotations

import time
from pathlib import Path

from iotop_plus.roots import Roots
from iotop_plus.sampling.health.io_errors import IoError, parse_kmsg_record
from iotop_plus.sampling.health.part import HealthState, HealthWorker
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory

SDA = Inventory({"sda": BlockDevice("sda", 8, 0, "disk")})


class FloodedLog:
    """A kernel log whose every read brings ``per_read`` errors on devices never seen before
    and one on sda, parsed from the lines ``blk_print_req_error`` writes."""

    problem: str | None = None

    def __init__(self, per_read: int) -> None:
        self.per_read = per_read
        self.reads = 0

    def read(self) -> list[IoError]:
        self.reads += 1
        names = [f"ghost{self.reads}x{i}" for i in range(self.per_read)] + ["sda"]
        lines = (f"3,1,2,-;I/O error, dev {n}, sector 8 op 0x0:(READ) flags 0x0" for n in names)
        return [e for line in lines if (e := parse_kmsg_record(line)) is not None]

    def close(self) -> None:
        pass


def _part(tmp_path: Path, log: FloodedLog) -> HealthState:
    roots = Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")
    part = HealthState(roots, HealthWorker(roots, use_smartctl=False))
    part.kmsg = log  # type: ignore[assignment]
    return part


def test_a_flood_of_new_device_names_keeps_only_the_inventorys(tmp_path: Path) -> None:
    log = FloodedLog(per_read=1000)
    part = _part(tmp_path, log)
    try:
        for _ in range(100):
            health, events = part.frame(SDA, time.monotonic())
            assert [e.device for e in events] == ["sda"]
    finally:
        part.close()
    assert log.reads == 100  # 100,000 names went by
    assert part.counts.totals == {"sda": 100}
    assert dict(health.io_errors or {}) == {"sda": 100}


def test_a_device_that_leaves_the_inventory_is_forgotten(tmp_path: Path) -> None:
    part = _part(tmp_path, FloodedLog(per_read=0))
    try:
        part.frame(SDA, time.monotonic())
        assert part.counts.totals == {"sda": 1}
        health, events = part.frame(Inventory({}), time.monotonic())
    finally:
        part.close()
    assert part.counts.totals == {} and events == ()
    assert dict(health.io_errors or {}) == {}
