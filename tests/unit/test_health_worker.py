"""The health worker (#26): its own thread, one device at a time, each at most every refresh;
a smartctl that never answers is killed and the other devices (and the frames) keep updating."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.health import smart as health
from iotop_plus.sampling.health.gate import HEALTH, HealthPart
from iotop_plus.sampling.health.part import (
    HEALTH_KEYS,
    NOT_READ_YET,
    HealthFrame,
    HealthWorker,
    health_from_json,
)
from iotop_plus.sampling.health.smart import TIMED_OUT
from tests.support.wait import holds_within

NVME_JSON = (
    Path(__file__).parent.parent / "fixtures" / "smartctl" / "nvme-media-errors-samsung-970evo.json"
)


def _smartctl(tmp_path: Path, hang_on: str) -> tuple[Path, Path]:
    """A stand-in smartctl: prints the NVMe capture, but never answers for ``/dev/hang_on``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(mode=0o700)
    pids = tmp_path / "pids"
    script = bin_dir / "smartctl"
    script.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do last="$a"; done\n'
        f'if [ "$last" = "/dev/{hang_on}" ]; then echo $$ >> "{pids}"; exec sleep 600; fi\n'
        f'cat "{NVME_JSON}"\n'
    )
    script.chmod(stat.S_IRWXU)
    return bin_dir, pids


def _alive(pids: Path) -> list[int]:
    if not pids.exists():
        return []
    return [int(p) for p in pids.read_text().split() if Path(f"/proc/{p}").exists()]


@pytest.mark.slow  # seconds on the wall clock (a hung smartctl's timeout)
def test_a_hung_smartctl_is_killed_and_the_other_device_keeps_updating(tmp_path: Path) -> None:
    bin_dir, pids = _smartctl(tmp_path, "sdb")
    worker = HealthWorker(
        Roots(sys=tmp_path / "sys"), refresh_s=0.3, timeout=0.5, use_smartctl=True
    )
    with search_path_override([str(bin_dir)]):
        worker.watch({"sda": "disk", "sdb": "disk"})
        try:
            assert holds_within(lambda: "sdb" in worker.readings(), 10.0)
            hung = worker.readings()["sdb"]
            assert hung.source == "none"
            assert hung.reason is not None and hung.reason.startswith(TIMED_OUT)
            first = worker.readings()["sda"].read_monotonic
            # sda is read again while sdb keeps hanging (and being killed) in between
            assert holds_within(lambda: worker.readings()["sda"].read_monotonic > first, 10.0)
            assert worker.readings()["sda"].media_errors == 7
        finally:
            worker.close()
    assert holds_within(lambda: not _alive(pids), 5.0)


def test_each_device_is_read_at_most_once_per_refresh(tmp_path: Path) -> None:
    calls: list[str] = []

    def reader(roots: Roots, name: str, kind: str, **_: object) -> health.DeviceHealth:
        calls.append(name)
        return health.DeviceHealth(source="none", reason="test", read_monotonic=time.monotonic())

    worker = HealthWorker(Roots(sys=tmp_path), refresh_s=3600.0, reader=reader)
    worker.watch({"sda": "disk", "sdb": "disk"})
    try:
        assert worker.wait_all(5.0)
        assert not holds_within(lambda: len(calls) > 2, 0.5)
        assert sorted(calls) == ["sda", "sdb"]
    finally:
        worker.close()


@pytest.mark.root
def test_frames_keep_coming_while_smartctl_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frame thread never waits for health: while the stand-in smartctl hangs (and
    would for 10 minutes), frames are built and say the device is not read yet; closing the
    source kills the stand-in."""
    disk = next(n for n in sorted(os.listdir("/sys/block")) if not n.startswith(("loop", "zram")))
    bin_dir, pids = _smartctl(tmp_path, disk)
    monkeypatch.setattr(health, "READ_TIMEOUT_S", 600.0)
    source = LiveSource(Roots())
    source.want(HEALTH, True)
    with search_path_override([str(bin_dir)]):
        try:
            frame = source.next_frame()
            assert holds_within(lambda: bool(_alive(pids)), 10.0)  # smartctl hangs now
            seq = frame.seq
            for _ in range(3):
                frame = source.next_frame()
            assert frame.seq == seq + 3 and _alive(pids)
            got = frame.get(HealthPart)
            assert got is not None
            doc = got.device_json(disk)
            assert list(doc) == list(HEALTH_KEYS)
            assert doc["source"] == "none" and doc["reason"] == NOT_READ_YET
        finally:
            source.close()
    assert holds_within(lambda: not _alive(pids), 5.0)


def test_a_recorded_health_part_comes_back(tmp_path: Path) -> None:
    calls: list[str] = []

    def reader(roots: Roots, name: str, kind: str, **_: object) -> health.DeviceHealth:
        calls.append(name)
        return health.parse_smartctl(json.loads(NVME_JSON.read_text()))

    worker = HealthWorker(Roots(sys=tmp_path), reader=reader)
    worker.watch({"nvme0n1": "disk"})
    try:
        assert worker.wait_all(5.0)
    finally:
        worker.close()
    part = HealthFrame(worker.readings(), {"nvme0n1": 12.5}, {"nvme0n1": 3}, "kmsg")
    back = health_from_json(part.as_json())
    assert back is not None
    assert back.device_json("nvme0n1") == part.device_json("nvme0n1")
    assert back.device_json("nvme0n1")["media_errors"] == 7
    assert back.device_json("nvme0n1")["io_errors"] == 3
    assert back.device_json("nvme0n1")["age_s"] == 12.5


def test_a_worker_whose_thread_dies_says_why_and_still_reaches_the_excepthook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The death is kept for the TUI (``failure``), a headless wait ends, and the exception
    still goes to ``threading.excepthook`` (what makes ``serve`` and ``record`` exit 1)."""
    import threading

    from iotop_plus.sampling.health import part as health_part

    seen: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_type.__name__))

    def driver_gone(roots: Roots, name: str) -> str | None:
        raise RuntimeError("sysfs went \x1b]0;away\x07")

    monkeypatch.setattr(health_part, "device_driver", driver_gone)
    worker = HealthWorker(Roots(), use_smartctl=False)
    try:
        worker.watch({"sda": "disk"})
        assert worker.wait_all(10.0)
        assert holds_within(lambda: seen == ["RuntimeError"], 10.0), seen
        assert worker.failure == (
            "the health reader stopped (RuntimeError: sysfs went \\x1b]0;away\\x07)"
        )
    finally:
        worker.close()
