"""``snapshot --from`` prints what the live snapshot printed for the same counter pairs."""

from __future__ import annotations

import argparse
import io
import os
import time
from pathlib import Path

import pytest

from iotop_plus.cli import build_parser
from iotop_plus.commands import snapshot
from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.collect import inventory_doc
from iotop_plus.record.times import zone_of
from iotop_plus.sampling.disks.sampler import HostInfo, Sample, Sampler
from iotop_plus.sampling.frame import sources
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.text import parse_time
from tests.support.synthetic import SyntheticTree


class CannedSampler(Sampler):
    """The fixture tree's counters, read ahead of time, handed out in order."""

    def __init__(self, tree: SyntheticTree, n: int) -> None:
        super().__init__(tree.roots)
        self.samples: list[Sample] = []
        # Stamped from the real monotonic clock: the schedule waits on that clock, so a base
        # ahead of it (a host up for less than the base) would make every interval wait.
        base = time.monotonic()
        for i in range(n):
            s = Sampler(tree.roots).sample()
            # Measured times as a live run would have them: ~1 s apart, not exact.
            self.samples.append(
                Sample(base + i * 1.0137 + i * i * 1e-4, 1_700_000_000.5 + i, s.counters)
            )
            tree.advance(1.0)
        self._next = iter(self.samples)

    def sample(self) -> Sample:
        return next(self._next)

    def host_info(self) -> HostInfo:
        return HostInfo("synthetic", "6.1.0-synthetic", None, True)


def args_for(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["snapshot", *argv])


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_recorded_snapshot_prints_the_live_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    tree = SyntheticTree(tmp_path / "tree", 6)
    canned = CannedSampler(tree, 6)
    samples = list(canned.samples)
    monkeypatch.setattr(
        sources, "live_source", lambda roots, **kw: live_source(roots, canned, **kw)
    )
    live = io.StringIO()
    assert snapshot.run(args_for("-f", fmt, "-i", "0.001", "-c", "5"), tree.roots, live) == 0

    inventory = Sampler(tree.roots).inventory()
    path = tmp_path / "r.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    header = {"host": "synthetic", "kernel": "6.1.0-synthetic", "zone": "UTC", "interval_s": 0.001}
    writer = ChunkWriter(fd, {**header, **inventory_doc(inventory, tree.roots, {})})
    for s in samples:
        writer.append(RecordedSample(s))
    writer.close_chunk()
    os.close(fd)
    recorded = io.StringIO()
    assert snapshot.run(args_for("-f", fmt, "--from", str(path)), tree.roots, recorded) == 0
    assert recorded.getvalue() == live.getvalue()
    assert "sda" in live.getvalue()


def test_typed_times_are_in_the_recorded_zone() -> None:
    tz = zone_of("Asia/Tokyo", 9 * 3600)
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC = 2023-11-15 07:13:20 in Tokyo
    assert parse_time("07:05", now, tz) == now - 8 * 60 - 20
    assert parse_time("08:00", now, tz) == now - 86400 + 46 * 60 + 40  # yesterday's 08:00
    assert parse_time("10m ago", now, tz) == now - 600
    assert parse_time("2023-11-14T22:00:00Z", now, tz) == now - 13 * 60 - 20
    assert parse_time("2023-11-15T07:00", now, tz) == now - 13 * 60 - 20
    with pytest.raises(ValueError, match=r"cannot read .* as a time"):  # the shared parser
        parse_time("yesterday-ish", now, tz)


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ({}, ("Linux", None, None)),
        ({"sysname": "Linux", "machine": "aarch64", "cpus": 64}, ("Linux", "aarch64", 64)),
        ({"machine": ["x"], "cpus": "64"}, ("Linux", None, None)),  # wrong types: unknown
    ],
)
def test_recorded_snapshot_json_is_iostats_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: dict[str, object], shown: tuple
) -> None:
    import json

    monkeypatch.setenv("TZ", "UTC")
    tree = SyntheticTree(tmp_path / "tree", 3)
    canned = CannedSampler(tree, 3)
    inventory = Sampler(tree.roots).inventory()
    path = tmp_path / "r.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    header = {"host": "db1", "kernel": "6.1.0-synthetic", "zone": "UTC", "interval_s": 1.0}
    writer = ChunkWriter(fd, {**header, **extra, **inventory_doc(inventory, tree.roots, {})})
    for s in canned.samples:
        writer.append(RecordedSample(s))
    writer.close_chunk()
    os.close(fd)
    out = io.StringIO()
    assert snapshot.run(args_for("-f", "json", "--from", str(path)), tree.roots, out) == 0
    doc = json.loads(out.getvalue())
    (host,) = doc["sysstat"]["hosts"]
    assert (host["nodename"], host["release"]) == ("db1", "6.1.0-synthetic")
    assert (host["sysname"], host["machine"], host["number-of-cpus"]) == shown
    # The first recorded sample was taken at 1_700_000_000.5: 2023-11-14 in UTC.
    assert host["date"] == "2023-11-14"
    assert [s["timestamp"][:10] for s in host["statistics"]] == ["2023-11-14"] * 2
