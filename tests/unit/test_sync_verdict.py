"""The verdict says where slow syncs wait: the device's flush, the journal, or other writers."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.latency.hist import (
    RUNNING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
)
from iotop_plus.sampling.sync.jbd2_part import DeviceJournal, Jbd2Frame
from iotop_plus.sampling.sync.jbd2_program import PhaseStat
from iotop_plus.sampling.sync.part import DeviceSync, SyncFrame, SyncPart
from iotop_plus.why.diagnosis import diagnose
from iotop_plus.why.sync_verdict import SYNC_KEY
from tests.unit.test_verdict_line import everything, frame, rates

MS = 1_000_000


def sync_frame(p50_ms: float, p99_ms: float) -> SyncFrame:
    values = [int(p50_ms * MS)] * 90 + [int(p99_ms * MS)] * 10
    hist = Histogram.of(values)
    return SyncFrame(MappingProxyType({"sda": DeviceSync(MappingProxyType({"fsync": hist}))}), True)


def latency(flush_ms: float | None) -> LatencyFrame:
    ops = {"write": OpLatency(Histogram.of([MS // 2] * 50))}
    if flush_ms is not None:
        ops["flush"] = OpLatency(Histogram.of([int(flush_ms * MS)] * 50))
    dev = DeviceLatency(MappingProxyType(ops))
    return LatencyFrame(RUNNING, MappingProxyType({"sda": dev}), span_s=1.0)


def journal(commit_ms: float | None) -> Jbd2Frame:
    if commit_ms is None:
        return Jbd2Frame(MappingProxyType({}), False)
    third = int(commit_ms * MS / 3)
    phases = {p: PhaseStat(10, 10 * third, third) for p in ("locked", "flushing", "logging")}
    dev = DeviceJournal(10, 1.0, MappingProxyType(phases), 10)
    return Jbd2Frame(MappingProxyType({"sda": dev}), True)


def verdict(syncs: SyncFrame, flush_ms: float | None, commit_ms: float | None) -> dict[str, Any]:
    parts: dict[str, Any] = {"sync": syncs, "jbd2": journal(commit_ms)}
    f = frame(
        rates(writes=200, await_ms=0.5),
        **everything(latency=latency(flush_ms)),
        **parts,
    )
    found = [c for c in diagnose(f, "sda").as_json() if c["cause"] == "sync"]
    return found[0] if found else {}


def test_fast_syncs_are_no_cause() -> None:
    assert verdict(sync_frame(1.0, 4.0), 0.5, 0.8) == {}


def test_syncs_that_wait_on_the_devices_flush() -> None:
    got = verdict(sync_frame(12.0, 20.0), 9.0, 11.0)
    assert got["evidence"]["waits_on"] == "flush"
    assert got["confidence"] == "medium"
    assert "device flush" in got["text"]


def test_syncs_that_wait_on_the_journal() -> None:
    got = verdict(sync_frame(12.0, 20.0), 0.3, 10.0)
    assert got["evidence"]["waits_on"] == "journal"
    assert got["evidence"]["logging_ms"] is not None


def test_syncs_that_wait_behind_other_writers() -> None:
    got = verdict(sync_frame(12.0, 20.0), 0.3, 1.0)
    assert got["evidence"]["waits_on"] == "writers"


def test_without_the_tracer_the_wait_is_unknown_and_said_so() -> None:
    got = verdict(sync_frame(12.0, 20.0), None, None)
    assert got["evidence"]["waits_on"] is None
    assert got["evidence"]["unknown"] == ["flush", "journal"]
    assert got["confidence"] == "low"


def test_sync_is_never_unchecked() -> None:
    f = frame(rates(writes=200, await_ms=0.5), **everything())
    assert "sync" not in diagnose(f, "sda").unchecked


def test_the_verdict_looks_for_the_sync_parts_key() -> None:
    assert SyncPart.key == SYNC_KEY
