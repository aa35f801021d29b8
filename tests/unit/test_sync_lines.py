"""The Sync tab's lines for one device: syncs by file, the journal, and where slow syncs wait."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.sampling.latency.hist import Histogram
from iotop_plus.sampling.sync.part import DeviceSync, FileSync, SyncFrame
from iotop_plus.tui.sync_lines import NOT_RECORDED, NOT_SYNCS, sync_lines
from iotop_plus.why import diagnosis, sync_verdict
from iotop_plus.why.diagnosis import Cause, Diagnosis
from iotop_plus.why.lookback import Lookback
from iotop_plus.why.verdicts import judge, with_verdicts
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
    f = with_verdicts(f, judge(f, Lookback(), ("sda",)))  # as the sampler or a worker judges
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


def test_the_tab_shows_where_syncs_wait_from_the_frame_s_verdict_and_never_judges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The UI thread draws the tab: it reads the verdict the frame carries (judged on the
    sampler thread or a worker) and never works it out itself."""
    hist = Histogram.of([12 * MS] * 90 + [30 * MS] * 10)
    parts: dict[str, Any] = {"sync": synced(hist), "jbd2": journal(10.0)}
    f = frame(rates(writes=200, await_ms=0.5), **everything(latency=latency(0.3)), **parts)
    judged = with_verdicts(f, judge(f, Lookback(), ("sda",)))
    verdict = (judged.verdicts or {})["sda"]
    assert isinstance(verdict, Diagnosis) and verdict.syncs is not None

    def never(*_args: object) -> None:
        raise AssertionError("the Sync tab judged the syncs itself")

    monkeypatch.setattr(sync_verdict, "sync_waits", never)
    monkeypatch.setattr(diagnosis, "sync_waits", never)
    assert f"Why: {verdict.syncs.text}" in sync_lines(judged, "sda")
    assert not any(line.startswith("Why:") for line in sync_lines(f, "sda"))  # not judged yet
    # What the frame carries is what it shows, whatever else the verdict holds.
    said = Cause("sync", {}, "low", "slow syncs (p99 31 ms, p50 12 ms): somewhere")
    other = Diagnosis((Cause("none", {}, "high", "idle: no I/O to explain"),), (), said)
    carried = with_verdicts(f, {"sda": other})
    assert sync_lines(carried, "sda")[-1] == f"Why: {said.text}"
