"""A frame part defined here, in a test module, and registered: the recorder's files, the
exporter's metrics, ``snapshot``'s JSON and the TUI's frame store carry it with no other file
edited (the registry is the only list of parts)."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import pytest

from iotop_plus.cli import build_parser
from iotop_plus.commands import record, snapshot
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.view import ExportSampler
from iotop_plus.record import store as store_module
from iotop_plus.record.store import FrameStore
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.model import Frame, FrameEvent
from iotop_plus.sampling.frame.part import FramePart, Metric, ReadContext
from iotop_plus.sampling.frame.sources import live_source
from tests.support.synthetic import SyntheticTree


@dataclass(frozen=True)
class Toy:
    """Reads completed per device so far, and how many frames the reader has read."""

    reads: Mapping[str, int]
    frames: int

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError("a toy does not pickle")  # the ring keeps it through to_json


class ToyReader:
    def __init__(self) -> None:
        self.frames = 0
        self.closed = False

    def read(self, ctx: ReadContext) -> tuple[Toy, tuple[FrameEvent, ...]]:
        self.frames += 1
        reads = {n: c.values[0] for n, c in ctx.sample.counters.items()}
        event = FrameEvent("toy", f"toy frame {self.frames}")
        return Toy(MappingProxyType(reads), self.frames), (event,) if self.frames == 2 else ()

    def close(self) -> None:
        self.closed = True


class ToyPart(FramePart[Toy]):
    key = "toy"
    letter: ClassVar[str | None] = "Z"
    always = True
    after: ClassVar[tuple[str, ...]] = ("memory",)

    def __init__(self) -> None:
        self.readers: list[ToyReader] = []

    def reader(self, roots: Roots) -> ToyReader:
        self.readers.append(ToyReader())
        return self.readers[-1]

    def to_json(self, value: Toy) -> Any:
        return {"reads": dict(value.reads), "frames": value.frames}

    def from_json(self, doc: Any) -> Toy | None:
        if not isinstance(doc, dict) or not isinstance(doc.get("reads"), dict):
            return None
        frames = doc.get("frames")
        if not isinstance(frames, int):
            return None
        reads = {k: v for k, v in doc["reads"].items() if isinstance(v, int)}
        return Toy(MappingProxyType(reads), frames)

    def disk_json(self, value: Toy, device: str) -> Mapping[str, Any]:
        return {"toy_reads": value.reads.get(device)}

    def entry_json(self, value: Toy) -> Mapping[str, Any]:
        return {"toy_frames": value.frames}

    def metrics(self, value: Toy) -> Iterable[Metric]:
        for name, reads in sorted(value.reads.items()):
            yield Metric("iotop_plus_toy_reads", "gauge", "Toy reads.", {"device": name}, reads)
        yield Metric("iotop_plus_toy_frames", "counter", "Toy frames.", {}, value.frames)


@pytest.fixture
def toy() -> Iterator[ToyPart]:
    part = ToyPart()
    registry.register(part)
    try:
        yield part
    finally:
        registry.unregister(part.key)


@pytest.fixture
def tree(tmp_path: Path) -> SyntheticTree:
    return SyntheticTree(tmp_path / "tree", 3)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_the_live_source_reads_the_toy_after_the_parts_it_names(
    toy: ToyPart, tree: SyntheticTree
) -> None:
    source = live_source(tree.roots)
    first = source.next_frame()
    tree.advance(1.0)
    second = source.next_frame()
    got = second.get(ToyPart)
    assert got is not None and got.frames == 2
    assert got.reads == {n: c.values[0] for n, c in second.sample.counters.items()}
    assert [e.text for e in second.events if e.kind == "toy"] == ["toy frame 2"]
    assert first.get(ToyPart) is not None and list(second.parts).index("toy") > list(
        second.parts
    ).index("memory")
    source.close()
    assert toy.readers[0].closed


def test_the_recorder_writes_the_toy_under_its_letter_and_replay_reads_it_back(
    toy: ToyPart, tree: SyntheticTree, tmp_path: Path
) -> None:
    rec = tmp_path / "rec"
    args = parse("--state-dir", str(tmp_path / "state"), "record", "--dir", str(rec),
                 "--interval", "0.1", "--count", "3")  # fmt: skip
    assert record.run(args, tree.roots) == 0
    timeline = open_timeline(rec)
    try:
        span = timeline.span()
        assert span is not None
        frames = [timeline.frame_at(span[0]), timeline.frame_at(span[1])]
    finally:
        timeline.close()
    replayed = [f.get(ToyPart) for f in frames if f is not None]
    assert [t.frames for t in replayed if t is not None] == [1, 3]
    # snapshot --from gives the recorded part in its JSON too
    out = io.StringIO()
    args = parse("snapshot", "--from", str(rec), "-f", "json")
    assert snapshot.run(args, tree.roots, out) == 0
    stats = json.loads(out.getvalue())["sysstat"]["hosts"][0]["statistics"]
    assert [s["toy_frames"] for s in stats] == [2, 3]


def test_snapshot_json_has_the_toys_disk_and_entry_keys(
    toy: ToyPart, tree: SyntheticTree, tmp_path: Path
) -> None:
    out = io.StringIO()
    args = parse("--state-dir", str(tmp_path / "state"), "snapshot", "-f", "json", "-i", "0.001",
                 "--all")  # fmt: skip
    assert snapshot.run(args, tree.roots, out) == 0
    [stat] = json.loads(out.getvalue())["sysstat"]["hosts"][0]["statistics"]
    assert stat["toy_frames"] == 2
    disks = {d["disk_device"]: d for d in stat["disk"]}
    counters = tree.roots.proc / "diskstats"
    for line in counters.read_text().splitlines():
        name, reads = line.split()[2], int(line.split()[3])
        if name in disks:
            assert disks[name]["toy_reads"] == reads


def test_serve_exports_the_toys_metrics(toy: ToyPart, tree: SyntheticTree) -> None:
    sampler = ExportSampler(live_source(tree.roots), 1.0, show_all=True)
    sampler.step()
    tree.advance(1.0)
    view = sampler.step()
    body, _ = FrameCollector(sampler.view).render()
    text = body.decode()
    assert view.frame is not None
    value = view.frame.get(ToyPart)
    assert value is not None
    for name, reads in value.reads.items():
        assert f'iotop_plus_toy_reads{{device="{name}"}} {float(reads)}' in text
    assert "iotop_plus_toy_frames_total 2.0" in text
    sampler.stop()


def test_the_tuis_frame_store_keeps_the_toy(
    toy: ToyPart, tree: SyntheticTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "OPEN_CELLS", 1)  # each frame a chunk, encoded
    source = live_source(tree.roots)
    ring = FrameStore(15, 1.0)
    kept: list[Frame] = []
    for _ in range(12):
        tree.advance(1.0)
        frame = source.next_frame()
        ring.append(frame)
        kept.append(frame)
    source.close()
    ring.wait_encoded()
    for frame in kept:
        found = ring.frame_at(frame.wall_time)
        assert found is not None and found.get(ToyPart) == frame.get(ToyPart)
    assert ring.frame_at(kept[0].wall_time) is not kept[0]  # rebuilt from its chunk


class FlaggedToyPart(ToyPart):
    """The toy, read and recorded only with ``record --toy-flag``."""

    key = "flagged-toy"
    letter = "V"
    always = False
    after = ()
    record_flag = "toy-flag"


@pytest.mark.parametrize("flagged", [False, True])
def test_a_part_with_a_record_flag_is_recorded_only_with_its_option(
    tree: SyntheticTree, tmp_path: Path, flagged: bool
) -> None:
    part = FlaggedToyPart()
    registry.register(part)
    try:
        rec = tmp_path / "rec"
        flag = ["--toy-flag"] if flagged else []
        args = parse("--state-dir", str(tmp_path / "state"), "record", "--dir", str(rec),
                     "--interval", "0.1", "--count", "2", *flag)  # fmt: skip
        assert record.run(args, tree.roots) == 0
        timeline = open_timeline(rec)
        try:
            span = timeline.span()
            assert span is not None
            last = timeline.frame_at(span[1])
        finally:
            timeline.close()
        assert last is not None
        got = last.get(FlaggedToyPart)
        assert (got.frames if got is not None else None) == (2 if flagged else None)
    finally:
        registry.unregister(part.key)
    with pytest.raises(SystemExit):  # the option goes with the part
        parse("record", "--toy-flag")


class FailingReader(ToyReader):
    def read(self, ctx: ReadContext) -> tuple[Toy, tuple[FrameEvent, ...]]:
        raise PermissionError(13, "Permission denied")


class FailingPart(ToyPart):
    key = "failing-toy"
    letter = None

    def reader(self, roots: Roots) -> ToyReader:
        return FailingReader()


def test_a_part_whose_reader_fails_costs_the_frame_only_its_value(
    toy: ToyPart, tree: SyntheticTree
) -> None:
    part = FailingPart()
    registry.register(part)
    try:
        source = live_source(tree.roots)
        frame = source.next_frame()
        source.close()
    finally:
        registry.unregister(part.key)
    assert frame.get(FailingPart) is None and frame.get(ToyPart) is not None
    assert frame.problems == ("failing-toy: Permission denied",)
    assert frame.rates.keys() == frame.sample.counters.keys()


def test_the_recorder_says_once_that_a_part_could_not_be_read(
    tree: SyntheticTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = FailingPart()
    registry.register(part)
    try:
        args = parse("--state-dir", str(tmp_path / "state"), "record", "--dir",
                     str(tmp_path / "rec"), "--interval", "0.1", "--count", "3")  # fmt: skip
        assert record.run(args, tree.roots) == 0
    finally:
        registry.unregister(part.key)
    said = [line for line in capsys.readouterr().err.splitlines() if "failing-toy" in line]
    assert said == [
        "iotop-plus record: failing-toy: Permission denied; the part is not recorded while "
        "this lasts"
    ]
