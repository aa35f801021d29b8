"""A loop device's ``diskseq`` (read at every frame) is opened once and read again with one
``pread``; its identity still changes when it is detached and another file attached under a
name, and the file of a name that went is closed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import DiskCounters, parse_diskstats
from iotop_plus.sampling.disks.sampler import Identities
from tests.support.loopdev import attach, detach, require_loop_devices
from tests.support.opens import counting_opens

pytestmark = [pytest.mark.root]


def _counters() -> dict[str, DiskCounters]:
    return parse_diskstats(Path("/proc/diskstats").read_text())


def _sparse(path: Path) -> Path:
    with open(path, "xb") as fh:  # never reuse a file we did not create
        fh.truncate(16 * 1024 * 1024)
    return path


def test_a_loop_devices_diskseq_is_opened_once_and_follows_a_new_attach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_loop_devices()
    one, two = _sparse(tmp_path / "one.img"), _sparse(tmp_path / "two.img")
    dev = attach(one)
    try:
        ids = Identities(Roots.resolve("/proc", "/sys"))
        first = ids.of(_counters(), time.monotonic())[dev]
        assert "diskseq" in first
        opened = counting_opens(monkeypatch)
        for _ in range(3):
            assert ids.of(_counters(), time.monotonic())[dev] == first
        assert not [p for p in opened if p.endswith(f"/{dev}/diskseq")]
        monkeypatch.undo()
        detach(dev, one)
        dev = attach(two)  # the kernel numbers this attach anew
        now = ids.of(_counters(), time.monotonic())
        assert dev in now and now[dev] != first
    finally:
        detach(dev, one)
        detach(dev, two)
