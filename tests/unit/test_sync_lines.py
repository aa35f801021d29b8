"""The Sync tab's lines for one device: syncs by file, the journal, and where slow syncs wait."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.latency.hist import Histogram
from iotop_plus.sampling.sync.part import DeviceSync, FileSync, SyncFrame
from iotop_plus.tui.sync_lines import NOT_RECORDED, NOT_SYNCS, sync_lines
from tests.unit.test_sync_verdict import journal, latency
from tests.unit.test_verdict_line import everything, frame, rates

MS = 1_000_000


def synced(hist: Histogram, path: str = "/var/lib/pg/wal/0001") -> SyncFrame:
    files = (FileSync(path, 40, "postgres", hist),)
    dev = DeviceSync(MappingProxyType({"fdatasync": hist}), files)
    return SyncFrame(MappingProxyType({"sda": dev}), True)


def test_syncs_by_file_journal_phases_and_the_verdict() -> None:
    hist = Histogram.of([12 * MS] * 90 + [30 * MS] * 10)
    parts: dict[str, Any] = {"sync": synced(hist), "jbd2": journal(10.0)}
    f = frame(
        rates(writes=200, await_ms=0.5),
        **everything(latency=latency(0.3)),
        **parts,
    )
    text = "\n".join(sync_lines(f, "sda"))
    assert "100 syncs (fdatasync 100): p50 " in text
    assert "postgres[40]  /var/lib/pg/wal/0001" in text
    assert NOT_SYNCS in text
    assert "Journal (jbd2): 10.0 commits/s" in text
    assert "logging  3.3 ms avg" in text
    assert "Why: slow syncs (p99 " in text and "journal commit" in text


def test_untraced_and_not_recorded_say_so() -> None:
    untraced = SyncFrame(MappingProxyType({}), False, "bpftrace is not installed")
    f = frame(rates(writes=10), sync=untraced)
    text = "\n".join(sync_lines(f, "sda"))
    assert "latency: bpftrace is not installed" in text
    assert "Journal: no jbd2 journal on this device" in text
    bare = frame(rates(writes=10))
    assert sync_lines(bare, "sda", recorded=True) == [NOT_RECORDED]


def test_a_hostile_path_is_shown_escaped() -> None:
    hist = Histogram.of([MS])
    parts: dict[str, Any] = {"sync": synced(hist, "/tmp/\x1b[2Jx")}
    f = frame(rates(writes=10), **parts)
    text = "\n".join(sync_lines(f, "sda"))
    assert "\x1b" not in text
