"""The verdict looks back on the frames before the one it judges, the same way in every
consumer: ``saturated`` (a deep, slow queue in 4 of the last 5 frames, against the device's
own quiet await) needs those frames, so it shows whether they were there.

- ``serve``: the exporter's ``iotop_plus_disk_diagnosis`` says ``saturated`` once the device
  was saturated in 4 of its last 5 frames, and not before;
- ``snapshot --from``: the first report of a window judges with the recorded frames before
  the window, as a replay does (without them a report late in the saturation said nothing).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from iotop_plus.cli import build_parser
from iotop_plus.commands import snapshot
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.fleet.queries import DIAGNOSIS
from iotop_plus.export.view import ExportSampler
from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import (
    IO_TICKS,
    READ_MS,
    READS,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
    DiskCounters,
)
from iotop_plus.sampling.disks.sampler import HostInfo, Sample
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.why.saturation import serves_one_at_a_time
from tests.support.synthetic import SyntheticTree
from tests.unit.test_verdict_line import rates

QUIET, BUSY = 4, 6
"""Frames in which the device is quiet (await 1 ms, queue 0.2), then saturated (100 % busy,
queue 30, await 100 ms)."""
T0 = 1_790_000_000.0


class _Scripted:
    """A synthetic host's frames with the device's rates scripted: quiet, then saturated."""

    def __init__(self, tree: SyntheticTree, device: str) -> None:
        self.live = LiveSource(tree.roots)
        self.roots = tree.roots
        self.tree = tree
        self.device = device
        self.k = 0

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        frame = self.live.next_frame(early)
        self.tree.advance(1.0)
        k, self.k = self.k, self.k + 1
        if k < QUIET:
            r = rates(reads=100, writes=100, await_ms=1.0, busy_ms=200)
        else:
            r = rates(reads=150, writes=150, await_ms=100.0, busy_ms=1000)
        return dataclasses.replace(frame, rates=MappingProxyType({**frame.rates, self.device: r}))

    def want(self, part: str, on: bool) -> None:
        self.live.want(part, on)

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        self.live.detail(pid, cgroup)

    def host_info(self) -> HostInfo:
        return self.live.host_info()

    def close(self) -> None:
        self.live.close()


def _causes(body: bytes, device: str) -> set[str]:
    return {
        s.labels["cause"]
        for f in text_string_to_metric_families(body.decode())
        for s in f.samples
        if s.name == DIAGNOSIS and s.labels["device"] == device
    }


def test_serve_exports_saturated_judged_over_the_frames_before(tmp_path: Path) -> None:
    tree = SyntheticTree(tmp_path / "tree", 2)
    device = tree.names[0]
    # A solid-state disk: with no lookback its verdict cannot say "saturated" from the one
    # frame (as a disk that serves one request at a time can).
    (tree.roots.sys / "block" / device / "queue" / "rotational").write_text("0\n")
    source = _Scripted(tree, device)
    sampler = ExportSampler(source, 1.0, show_all=True)
    collector = FrameCollector(sampler.view)
    seen: list[set[str]] = []
    try:
        for _ in range(QUIET + BUSY):
            sampler.step()
            seen.append(_causes(collector.render(None)[0], device))
    finally:
        source.close()
    frame = sampler.view().frame
    assert frame is not None
    assert not serves_one_at_a_time(frame.inventory.get(device))
    # Saturated from the 4th saturated frame on (4 of the last 5), never while quiet.
    assert [("saturated" in causes) for causes in seen] == [False] * (QUIET + 3) + [True] * 3


def _counters(values: list[int]) -> MappingProxyType[str, DiskCounters]:
    return MappingProxyType({"sda": DiskCounters(8, 0, "sda", tuple(values), 17)})


def _write_saturating(path: Path, busy_s: int = BUSY) -> list[float]:
    """A recording of one device, quiet for QUIET seconds then saturated for ``busy_s`` more;
    returns the samples' wall times."""
    values = [10**6] * 17
    values[8] = 0
    walls = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        header = {"host": "synthetic", "zone": "UTC", "interval_s": 1.0, "inventory": []}
        writer = ChunkWriter(fd, header, sync=False)
        for k in range(QUIET + busy_s + 1):
            if k:
                busy = k > QUIET
                ios, wait = (150, 100) if busy else (100, 1)
                values[READS] += ios
                values[WRITES] += ios
                values[READ_MS] += ios * wait
                values[WRITE_MS] += ios * wait
                values[IO_TICKS] += 1000 if busy else 200
                values[TIME_IN_QUEUE] += 2 * ios * wait
            walls.append(T0 + k)
            writer.append(RecordedSample(Sample(5000.0 + k, T0 + k, _counters(values))))
        writer.close_chunk()
    finally:
        os.close(fd)
    return walls


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).isoformat()


def _reports(path: Path, *argv: str) -> list[Any]:
    out = io.StringIO()
    args = build_parser().parse_args(["snapshot", "--from", str(path), "-f", "json", *argv])
    assert snapshot.run(args, Roots(), out) == 0
    return list(json.loads(out.getvalue())["sysstat"]["hosts"][0]["statistics"])


def _held(report: Any) -> set[str]:
    [disk] = report["disk"]
    return {entry["cause"] for entry in disk["diagnosis"]}


def test_a_recorded_report_judges_with_the_recorded_frames_before_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    path = tmp_path / "r.rec"
    walls = _write_saturating(path)
    whole = _reports(path)
    assert [("saturated" in _held(r)) for r in whole] == [False] * (QUIET + 3) + [True] * 3
    # A window that starts late in the saturation: its first report says what the whole
    # recording's report for that interval says.
    late = _reports(path, "--start", _iso(walls[-3]))
    assert [r["timestamp"] for r in late] == [r["timestamp"] for r in whole[-2:]]
    assert [_held(r) for r in late] == [_held(r) for r in whole[-2:]]
    assert "saturated" in _held(late[0])


def test_a_window_late_in_a_long_saturation_keeps_the_quiet_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fifteen seconds into a saturation the five frames before a window are all saturated:
    its first report is judged against the quiet await of the recording before them, as
    live and in a replay."""
    monkeypatch.setenv("TZ", "UTC")
    path = tmp_path / "r.rec"
    walls = _write_saturating(path, busy_s=20)
    whole = _reports(path)
    assert all("saturated" in _held(r) for r in whole[QUIET + 3 :])
    late = _reports(path, "--start", _iso(walls[QUIET + 15]))
    assert [r["timestamp"] for r in late] == [r["timestamp"] for r in whole[QUIET + 15 :]]
    assert [_held(r) for r in late] == [_held(r) for r in whole[QUIET + 15 :]]
    [disk] = late[0]["disk"]
    [cause] = [c for c in disk["diagnosis"] if c["cause"] == "saturated"]
    assert cause["evidence"]["quiet_await"] == 1.0
