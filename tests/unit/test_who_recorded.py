"""The recording keeps the issuers (#24, record type ``W``): while the tracer attributes
requests, each sample stores the top issuers per device, and frames rebuilt from the
recording carry them again; a frame without (an estimate, no tracer) records none."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from iotop_plus.record.chunks import ChunkWriter
from iotop_plus.record.collect import inventory_doc, recorded_sample
from iotop_plus.record.timeline import open_timeline
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.processes.issuers import ESTIMATE, IssuersFrame
from iotop_plus.sampling.processes.issuers_part import ISSUERS, IssuersPart
from tests.support.synthetic import SyntheticTree
from tests.unit.test_who_issuers import proc_tree, traced_frames


def test_recorded_issuers_come_back_in_replayed_frames(tmp_path: Path) -> None:
    _, found = traced_frames(proc_tree(tmp_path / "who"))
    assert found is not None and found.of("vda")
    # A recording keeps the issuers of its samples' devices: here the synthetic tree's sda.
    traced = IssuersFrame(
        found.source, {"sda": found.devices["vda"]}, {"sda": found.cgroups["vda"]}, found.status
    )
    tree = SyntheticTree(tmp_path / "tree", 2)
    source = LiveSource(tree.roots)
    path = tmp_path / "r.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    inventory = Sampler(tree.roots).inventory()
    header = {"host": "synthetic", "kernel": "6.1.0-synthetic", "zone": "UTC", "interval_s": 1}
    writer = ChunkWriter(fd, {**header, **inventory_doc(inventory, tree.roots, {})})
    estimate = IssuersFrame(ESTIMATE, traced.devices, traced.cgroups, "no tracer")
    live = []
    for who in (traced, estimate, None):
        tree.advance(1.0)
        frame = dataclasses.replace(source.next_frame(), parts={ISSUERS: who} if who else {})
        live.append(frame)
        rs = recorded_sample(frame, tree.roots, 0)
        assert ("W" in rs.parts) == (who is traced)
        writer.append(rs)
    writer.close_chunk()
    os.close(fd)
    timeline = open_timeline(path)
    try:
        replayed = [timeline.frame_at(f.wall_time) for f in live]
    finally:
        timeline.close()
    first, second, third = replayed
    assert first is not None
    first_who = first.get(IssuersPart)
    assert first_who is not None
    assert [i.to_json() for i in first_who.of("sda")] == [i.to_json() for i in traced.of("sda")]
    recorded = {c.cgroup: (c.r_s, c.w_s, c.rkB_s, c.wkB_s) for c in first_who.cgroups["sda"]}
    shares = {c.cgroup: (c.r_s, c.w_s, c.rkB_s, c.wkB_s) for c in traced.cgroups["sda"]}
    assert recorded.keys() == shares.keys()
    for name, figures in shares.items():
        assert recorded[name] == pytest.approx(figures, abs=0.01)  # JSON keeps 2 decimals
    # Not recorded: nothing, rather than live figures.
    assert second is not None and second.get(IssuersPart) is None
    assert third is not None and third.get(IssuersPart) is None
