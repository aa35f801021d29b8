"""Issue #23 item 1: setting and probe events and queue settings are parts of the frame, read
once (the one journal tail, the one queue reader), and ``snapshot`` JSON shows the events."""

from __future__ import annotations

import argparse
import io
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.cli import build_parser
from iotop_plus.commands import snapshot
from iotop_plus.commands.snapshot_output import emit
from iotop_plus.export.view import ExportSampler
from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.collect import inventory_doc, recorded_sample
from iotop_plus.sampling.disks.queue_settings import QueuePart, QueueReader, parse_scheduler
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.journal_events import journal_reader
from iotop_plus.state import CHANGES, MAX_LINE_BYTES, PROBES, JsonlTail, StateDir
from tests.support.synthetic import SyntheticTree

CHANGE = {
    "record": "change",
    "time": "2026-11-26T05:00:00+00:00",
    "run": "r1",
    "sequence": 1,
    "action": "set",
    "device": "sdb",
    "queue_device": "sdb",
    "setting": "read_ahead_kb",
    "old": "128",
    "new": "16",
    "effective": "16",
}
RESULT = {
    "record": "probe-result",
    "time": 1795669300.5,
    "result": {"target": "/dev/sdb", "preset": "randread", "device": "sdb", "read": None},
}


@pytest.fixture
def tree(tmp_path: Path) -> SyntheticTree:
    return SyntheticTree(tmp_path / "tree", 3)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[StateDir]:
    got = StateDir(tmp_path / "state")
    got.fd()
    yield got
    got.close()


def test_journal_lines_written_between_frames_are_the_next_frames_events(
    tree: SyntheticTree, state: StateDir
) -> None:
    state.append(CHANGES, {**CHANGE, "sequence": 0})  # before the source: not an event
    source = live_source(tree.roots, journal=state)
    first = source.next_frame()
    assert [e for e in first.events if e.kind == "setting"] == []
    state.append(CHANGES, CHANGE)
    state.append(PROBES, RESULT)
    frame = source.next_frame()
    setting, probe = [e for e in frame.events if e.kind in ("setting", "probe")]
    assert (setting.kind, setting.device, setting.source) == ("setting", "sdb", "changes")
    assert setting.record == CHANGE  # the line unchanged
    assert setting.text == "read_ahead_kb 128→16" and setting.marked
    # Wall time and monotonic time: the line's own time, on both clocks.
    when = 1795669200.0  # 2026-11-26T05:00:00Z
    assert setting.wall_time == when
    assert setting.monotonic == pytest.approx(frame.monotonic - (frame.wall_time - when))
    assert (probe.kind, probe.device, probe.text) == ("probe", "sdb", "probe done: randread")
    assert probe.wall_time == RESULT["time"]
    assert source.next_frame().events == ()  # each line once


def test_queue_settings_are_read_on_a_setting_event_or_after_the_refresh(
    tree: SyntheticTree, state: StateDir
) -> None:
    queues = QueueReader(tree.roots, refresh_s=3600)
    source = LiveSource(tree.roots, readers={"queues": queues, "journal": journal_reader(state)})
    first = source.next_frame()
    assert first.nr_requests["sdb"] == 64
    in_force = first.get(QueuePart)
    assert in_force is not None and in_force["sdb"].values["read_ahead_kb"] == 128
    ra = tree.roots.sys_block / "sdb" / "queue" / "read_ahead_kb"
    ra.write_text("16\n")
    quiet = source.next_frame()
    assert quiet.get(QueuePart) is first.get(QueuePart)  # no re-read: nothing said it changed
    state.append(CHANGES, CHANGE)
    told = source.next_frame().get(QueuePart)
    assert told is not None and told["sdb"].values["read_ahead_kb"] == 16  # re-read with the event
    ra.write_text("32\n")
    queues.refresh_s = 0.0
    refreshed = source.next_frame().get(QueuePart)
    assert refreshed is not None and refreshed["sdb"].values["read_ahead_kb"] == 32  # the refresh


def test_the_exporter_counts_changes_from_the_frames_and_keeps_its_queue_view(
    tree: SyntheticTree, state: StateDir
) -> None:
    state.append(CHANGES, CHANGE)  # history: serve counts what the journal already holds
    sampler = ExportSampler(
        live_source(tree.roots, journal=state, journal_history=True), 1.0, show_all=True
    )
    view = sampler.step()
    assert view.changes == {("sdb", "read_ahead_kb"): 1}
    static = view.static_version
    assert sampler.step().static_version == static  # nothing new
    state.append(CHANGES, {**CHANGE, "sequence": 2})
    (tree.roots.sys_block / "sdb" / "queue" / "read_ahead_kb").write_text("16\n")
    view = sampler.step()
    assert view.changes == {("sdb", "read_ahead_kb"): 2}
    assert view.queues["sdb"].values["read_ahead_kb"] == 16
    assert view.static_version > static
    sampler.stop()


def test_the_recorder_stores_the_frames_journal_events_unchanged(
    tree: SyntheticTree, state: StateDir
) -> None:
    source = live_source(tree.roots, journal=state)
    source.next_frame()
    state.append(CHANGES, CHANGE)
    rs = recorded_sample(source.next_frame(), tree.roots, 0)
    assert list(rs.events) == [{"source": "changes", "record": CHANGE}]
    frame = source.next_frame()
    doc = inventory_doc(frame.inventory, tree.roots, frame.nr_requests, frame.get(QueuePart))
    queue = tree.roots.sys_block / "sdb" / "queue"
    assert doc["queue"]["sdb"] == {  # the frame's queue part, as the files say
        "nr_requests": int((queue / "nr_requests").read_text()),
        "read_ahead_kb": int((queue / "read_ahead_kb").read_text()),
        "scheduler": parse_scheduler((queue / "scheduler").read_text())[0],
    }
    assert inventory_doc(frame.inventory, tree.roots, frame.nr_requests) == doc  # read alike


def args_for(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["snapshot", *argv])


def test_snapshot_json_gives_each_statistic_the_frames_events(
    tree: SyntheticTree, state: StateDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    source = live_source(tree.roots, journal=state)
    first = source.next_frame()
    state.append(CHANGES, CHANGE)
    out = io.StringIO()
    reports = snapshot._intervals(source, first, 0.001, 1)
    args = args_for("-f", "json", "--all")
    emit(args, out, source.host_info(), first.inventory, None, reports, 0.001)
    [stat] = json.loads(out.getvalue())["sysstat"]["hosts"][0]["statistics"]
    assert stat["events"] == [
        {
            "time": "2026-11-26T05:00:00+00:00",
            "kind": "setting",
            "device": "sdb",
            "text": "read_ahead_kb 128→16",
            "record": CHANGE,
        }
    ]


def test_snapshot_from_a_recording_derives_kind_and_text_of_recorded_events(
    tree: SyntheticTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording stores journal lines as ``{"source", "record"}`` and device events with
    their kind and text; ``--from`` prints them as live ``snapshot`` does."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    sampler = Sampler(tree.roots)
    path = tmp_path / "r.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    header = {"host": "synthetic", "kernel": "6.1.0-synthetic", "zone": "UTC", "interval_s": 1}
    writer = ChunkWriter(fd, {**header, **inventory_doc(sampler.inventory(), tree.roots, {})})
    base = sampler.sample()
    added = {"source": "device", "kind": "device-added", "text": "sdc appeared", "device": "sdc"}
    journaled = {"source": "changes", "record": CHANGE}
    per_sample: list[tuple[Mapping[str, Any], ...]] = [(), (added,), (journaled,)]
    for i, events in enumerate(per_sample):
        tree.advance(1.0)
        s = sampler.sample()
        sample = type(s)(base.monotonic + i, 1795669199.0 + i, s.counters)
        writer.append(RecordedSample(sample, events=events))
    writer.close_chunk()
    os.close(fd)
    out = io.StringIO()
    args = args_for("--from", str(path), "-f", "json", "--all", "-i", "2")
    assert snapshot.run(args, tree.roots, out) == 0
    [stat] = json.loads(out.getvalue())["sysstat"]["hosts"][0]["statistics"]
    assert stat["events"] == [
        {
            "time": "2026-11-26T05:00:00+00:00",  # a device event: its sample's time
            "kind": "device-added",
            "device": "sdc",
            "text": "sdc appeared",
            "record": None,
        },
        {
            "time": "2026-11-26T05:00:00+00:00",
            "kind": "setting",
            "device": "sdb",
            "text": "read_ahead_kb 128→16",
            "record": CHANGE,
        },
    ]


def test_the_one_json_lines_reader_caps_lines_for_records_too(state: StateDir) -> None:
    """``StateDir.records`` read lines whole, however long; it now shares the tail's cap."""
    fd = state.open_file(CHANGES, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    huge = json.dumps({"record": "change", "pad": "x" * (MAX_LINE_BYTES + 10)})
    os.write(fd, (huge + "\n" + json.dumps(CHANGE) + "\n").encode())
    os.close(fd)
    skipped: list[str] = []
    assert list(state.records(CHANGES, skipped)) == [CHANGE]
    assert len(skipped) == 1 and skipped[0].endswith("(too long)")


def test_the_rest_of_an_overlong_line_read_in_two_pieces_is_not_taken_for_a_line(
    state: StateDir,
) -> None:
    tail = JsonlTail(state, CHANGES)
    fd = state.open_file(CHANGES, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, b'{"pad": "' + b"x" * (MAX_LINE_BYTES + 10))
    assert tail.read() == (False, [])
    os.write(fd, b'{"record": "change", "smuggled": true}\n')  # the line's rest
    os.write(fd, (json.dumps(CHANGE) + "\n").encode())
    os.close(fd)
    assert tail.read() == (False, [CHANGE])
