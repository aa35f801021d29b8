"""History keeps the who: command lines once per pid, the cgroups with I/O and their split
per device, in recordings (format 4, types N and C) and in the TUI's ring; older recordings
read with neither ("not recorded")."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record.bundle import write_bundle
from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.collect import recorded_sample
from iotop_plus.record.recorded_who import (
    MAX_CMDLINE,
    CommandLines,
    WhoParts,
    cgroup_frame_of,
    cgroups_part,
)
from iotop_plus.record.recorder import Recorder
from iotop_plus.record.store import FrameStore, strip_processes
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.active import KEPT_CGROUPS, active_cgroup_frame
from iotop_plus.sampling.cgroups.reader import CgroupReader, cgroup_rates_between
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import PROCESSES, CgroupFrame, Frame
from tests.support.cgroup_trees import synthetic_tree, systemd_tree
from tests.support.idle import idle_processes
from tests.support.old_recordings import STEP, VERSIONS, copy_as_directory
from tests.support.old_recordings import T0 as OLD_T0
from tests.support.synthetic import SyntheticTree

POSTGRES = "/system.slice/postgresql.service"
T0 = 1_700_000_000.0  # a minute boundary


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Three real processes with the same comm and three command lines, one of them long."""
    long = "x" * (MAX_CMDLINE * 2)
    with idle_processes(["--name=a"], ["--name=b"], [long]) as procs:
        yield procs


def _process_frame(wall: float, *, changed: bool = False) -> Frame:
    source = LiveSource(Roots(), devices=False)
    source.want(PROCESSES, True)
    try:
        frame = source.next_frame()
    finally:
        source.close()
    sample = dataclasses.replace(frame.sample, wall_time=wall)
    return dataclasses.replace(frame, sample=sample, inventory_changed=changed)


def test_each_pids_command_line_is_written_once_per_chunk(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    pids = [p.pid for p in sleepers]
    memo = CommandLines()
    first = memo.part(_process_frame(T0 + 1), pids)
    lines = {e["pid"]: e["cmdline"] for e in first}
    assert set(lines) == set(pids)
    assert "--name=a" in lines[pids[0]] and "--name=b" in lines[pids[1]]
    assert len(lines[pids[2]]) == MAX_CMDLINE  # capped
    assert memo.part(_process_frame(T0 + 2), pids) == []  # the same chunk: already there
    # The next minute is a new chunk (read alone when seeking): every line again.
    assert {e["pid"] for e in memo.part(_process_frame(T0 + 61), pids)} == set(pids)
    # New devices close the chunk too.
    assert len(memo.part(_process_frame(T0 + 62, changed=True), pids)) == 3


def test_a_file_started_mid_minute_gets_every_command_line_again(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    pids = [p.pid for p in sleepers]
    who = WhoParts(CommandLines(), cgroups=False)
    frame = _process_frame(T0 + 1)
    rs = RecordedSample(frame.sample, tuple({"pid": pid, "comm": "python"} for pid in pids))
    assert len(who.add(rs, frame, 0, False).parts["N"]) == 3  # the first file starts
    assert "N" not in who.add(rs, frame, 1, True).parts
    # The recorder rotated (--max-size) while writing the last sample: a new file.
    assert len(who.add(rs, frame, 2, True).parts["N"]) == 3


def _cgroup_frames(tmp_path: Path) -> tuple[Roots, CgroupFrame]:
    base = tmp_path / "tree"
    systemd_tree(base, scale=1)
    roots = Roots(base / "proc", base / "sys")
    reader = CgroupReader(roots)
    before = reader.sample()
    systemd_tree(base, scale=3)
    after = reader.sample()
    return roots, CgroupFrame(after, MappingProxyType(cgroup_rates_between(before, after)))


def _write(path: Path, samples: list[RecordedSample]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        writer = ChunkWriter(fd, {"host": "h", "kernel": "k", "zone": "UTC", "inventory": []})
        for rs in samples:
            writer.append(rs)
        writer.close_chunk()
    finally:
        os.close(fd)


def test_recorded_cgroups_come_back_with_their_split_per_device(tmp_path: Path) -> None:
    _, part = _cgroup_frames(tmp_path)
    tree = SyntheticTree(tmp_path / "disks", 2)
    source = LiveSource(tree.roots)
    samples = []
    for k in range(3):
        tree.advance(1.0)
        sample = dataclasses.replace(source.next_frame().sample, wall_time=T0 + k)
        doc = cgroups_part(part)
        samples.append(RecordedSample(sample, parts={"C": doc} if k else {}))
    source.close()
    (tmp_path / "rec").mkdir()
    _write(tmp_path / "rec" / "iotop-plus-000001-20231114-221320.rec", samples)
    timeline = open_timeline(tmp_path / "rec")
    assert timeline.frame_at(T0) is not None
    assert timeline.frame_at(T0).cgroups is None  # type: ignore[union-attr]  # not recorded
    frame = timeline.frame_at(T0 + 2)
    assert frame is not None and frame.cgroups is not None
    got = frame.cgroups.rates[POSTGRES]
    live = part.rates[POSTGRES]
    assert got is not None and live is not None
    # Devices by kernel name (the recording outlives the MAJ:MIN numbering).
    assert set(got.devices) == {"sda"}
    assert got.devices["sda"].read_bps == pytest.approx(live.devices["8:0"].read_bps, abs=0.1)
    assert got.total.write_iops == pytest.approx(live.total.write_iops, abs=0.1)
    # Only the cgroups that did I/O; the idle ones are not kept.
    assert set(frame.cgroups.sample.cgroups) == {
        p for p, r in part.rates.items() if r is not None and r.total.total_bps > 0
    }
    some = frame.cgroups.sample.cgroups[POSTGRES].pressure
    assert some is not None and some.some is not None and some.some.avg10 == 1.5
    timeline.close()


def test_at_most_the_busiest_cgroups_are_kept(tmp_path: Path) -> None:
    base = tmp_path / "tree"
    synthetic_tree(base, 300, tick=0, lean=True)
    reader = CgroupReader(Roots(base / "proc", base / "sys"))
    before = reader.sample()
    synthetic_tree(base, 300, tick=1, lean=True)
    after = reader.sample()
    part = CgroupFrame(after, MappingProxyType(cgroup_rates_between(before, after)))
    doc = cgroups_part(part)
    assert doc is not None and len(doc["cgroups"]) == KEPT_CGROUPS
    totals = [sum(v[0] + v[1] for v in row["devices"].values()) for row in doc["cgroups"]]
    assert totals == sorted(totals, reverse=True)
    kept = active_cgroup_frame(part)
    assert kept is not None and len(kept.sample.cgroups) == KEPT_CGROUPS


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        {"cgroups": "no"},
        {"cgroups": [{"path": 3}, {"path": "rel"}, {"path": "/a", "devices": {"sda": [1, 2]}}]},
        {"cgroups": [{"path": "/a", "devices": {"sda": [-1, 0, 0, 0, 0, 0]}, "some": "x"}]},
        {"cgroups": [{"path": "/a", "devices": {"sda": [float("nan"), 0, 0, 0, 0, 0]}}]},
        {"version": ["v9"], "root": 7, "cgroups": [{"path": "/a"}] * 1000},
    ],
)
def test_a_corrupt_cgroups_part_is_read_without_a_crash(doc: object) -> None:
    part = cgroup_frame_of(doc, 1.0, T0)
    if part is not None:
        assert len(part.sample.cgroups) <= KEPT_CGROUPS
        for rates in part.rates.values():
            assert rates is not None
            assert all(r.read_bps >= 0 for r in rates.devices.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_an_older_recording_reads_with_no_cgroups_and_the_comm(
    tmp_path: Path, version: int
) -> None:
    timeline = open_timeline(copy_as_directory(version, tmp_path / "rec"))
    frame = timeline.frame_at(OLD_T0 + 2 * STEP)
    assert frame is not None and frame.cgroups is None
    assert frame.processes is not None
    assert [t.cmdline for t in frame.processes.sample.tasks.values()] == ["fio"]
    timeline.close()


def test_the_recorder_stores_the_cgroup_the_frame_shows(
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    """The recorder re-read /proc/PID/cgroup and took its v2 line: on a hybrid host every task
    is in the v2 root, so each process showed "/" (or "-"), never its blkio cgroup. It now
    stores the cgroup of the frame (the one the Processes tab shows, read once per task)."""
    source = LiveSource(Roots(), devices=False)
    source.want(PROCESSES, True)
    try:
        source.next_frame()
        frame = source.next_frame()
    finally:
        source.close()
    assert frame.processes is not None
    pids = {p.pid for p in sleepers}
    keys = [k for k in frame.processes.rates if k[0] in pids]
    assert len(keys) == 3
    busy = {
        k: dataclasses.replace(r, read_bps=1.0 + i)
        for i, (k, r) in enumerate(frame.processes.rates.items())
        if k in keys and r is not None
    }
    cgroups = {k: f"/blkio/child-{k[0]}" for k in keys}
    forced = dataclasses.replace(
        frame,
        processes=dataclasses.replace(
            frame.processes, rates=MappingProxyType(busy), cgroups=MappingProxyType(cgroups)
        ),
    )
    rs = recorded_sample(forced, Roots(), 5)
    assert rs.processes is not None
    assert {p["pid"]: p["cgroup"] for p in rs.processes} == {
        k[0]: f"/blkio/child-{k[0]}" for k in keys
    }


def test_the_store_keeps_each_kept_process_cgroup_and_only_busy_cgroups(tmp_path: Path) -> None:
    _, part = _cgroup_frames(tmp_path)
    source = LiveSource(Roots(), devices=False)
    source.want(PROCESSES, True)
    try:
        source.next_frame()
        frame = source.next_frame()
    finally:
        source.close()
    assert frame.processes is not None and len(frame.processes.sample.tasks) > 5
    kept = strip_processes(frame, 5).processes
    assert kept is not None and len(kept.sample.tasks) == 5
    assert set(kept.cgroups) == set(kept.sample.tasks)  # each kept task keeps its cgroup
    ring = FrameStore()
    ring.append(dataclasses.replace(frame, cgroups=part))
    shown = ring.frames()[-1].cgroups
    assert shown is not None
    busy = {p for p, r in part.rates.items() if r is not None and r.total.total_bps > 0}
    assert set(shown.sample.cgroups) == busy < set(part.sample.cgroups)
    assert shown.rates[POSTGRES] == part.rates[POSTGRES]


def test_a_bundle_cut_mid_minute_still_names_its_processes(
    sleepers: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """The recorder wrote each command line once, in the minute's first sample; a bundle
    starting later in that minute must carry them again in its own first chunk."""
    pids = [p.pid for p in sleepers]
    tree = SyntheticTree(tmp_path / "disks", 2)
    source = LiveSource(tree.roots)
    procs = LiveSource(Roots(), devices=False)
    procs.want(PROCESSES, True)
    recorder = Recorder(tmp_path / "rec", lambda: {"host": "h", "zone": "UTC", "inventory": []})
    who = WhoParts(CommandLines(), cgroups=False)
    try:
        for k in range(6):
            tree.advance(1.0)
            frame = source.next_frame()
            part = procs.next_frame().processes
            assert part is not None
            rates = {
                key: dataclasses.replace(r, read_bps=1.0)
                for key, r in part.rates.items()
                if key[0] in pids and r is not None
            }
            frame = dataclasses.replace(
                frame,
                sample=dataclasses.replace(frame.sample, wall_time=T0 + k),
                processes=dataclasses.replace(part, rates=MappingProxyType(rates)),
            )
            rs = recorded_sample(frame, Roots(), 20)
            recorder.write(who.add(rs, frame, recorder.files_started, recorder.writer is not None))
    finally:
        recorder.close()
        source.close()
        procs.close()
    timeline = open_timeline(tmp_path / "rec")
    written = [timeline.recorded(T0 + k) for k in range(6)]
    assert [bool(s and "N" in s.parts) for s in written] == [False, True] + [False] * 4
    out = tmp_path / "cut.rec"
    assert write_bundle(timeline, T0 + 3, T0 + 5, out) == 3
    timeline.close()
    bundle = open_timeline(out)
    cut = bundle.frame_at(T0 + 5)
    assert cut is not None and cut.processes is not None
    lines = {t.cmdline.split()[-1][:8] for t in cut.processes.sample.tasks.values()}
    assert lines == {"--name=a", "--name=b", "x" * 8}
    bundle.close()
