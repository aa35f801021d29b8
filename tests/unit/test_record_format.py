"""The recording format: exact round trips, torn and corrupt files, newer versions, timelines."""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record.chunks import ChunkEncoder, ChunkWriter, RecordedSample
from iotop_plus.record.format import VERSION, FormatError
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.timeline import open_timeline
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample, rates_between

T0 = 1_700_000_040.25  # 40 s into a minute: the first chunk is short


def make_samples(n: int, devices: int = 12, seed: int = 3) -> list[Sample]:
    rng = random.Random(seed)
    values = {
        f"sd{chr(97 + i)}": [rng.randint(0, 10**6) for _ in range(17)] for i in range(devices)
    }
    values["nvme0n1"] = [2**64 - 5] + [0] * 16  # near the u64 top: wraps below
    out = []
    for s in range(n):
        for v in values.values():
            for k in range(17):
                v[k] = (v[k] + rng.randint(0, 5000)) % 2**64 if k != 8 else rng.randint(0, 9)
        counters = {
            name: DiskCounters(8, i, name, tuple(v), 17 if i % 3 else 15)
            for i, (name, v) in enumerate(values.items())
        }
        out.append(Sample(4321.123456 + s * 1.000371, T0 + s, MappingProxyType(counters)))
    return out


def write(path: Path, samples: list[Sample], *, close: bool = True, **extra: object) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        writer = ChunkWriter(fd, {"host": "h", "kernel": "k", "zone": "UTC", "inventory": []})
        for i, s in enumerate(samples):
            writer.append(
                RecordedSample(
                    s,
                    processes=({"pid": i, "comm": "x"},),
                    pressure={"io": {"some": None, "full": None}},
                    events=({"source": "device", "kind": "device-added", "text": "t"},)
                    if i == 3
                    else (),
                )
            )
        if close:
            writer.close_chunk()
    finally:
        os.close(fd)


def read_all(path: Path, warnings: list[str] | None = None) -> list[RecordedSample]:
    rec = RecordingFile(path, (warnings if warnings is not None else []).append)
    return [s for i in range(len(rec.chunks)) for s in rec.samples(i)]


def test_round_trip_is_exact(tmp_path: Path) -> None:
    samples = make_samples(150)
    write(tmp_path / "r.rec", samples)
    got = read_all(tmp_path / "r.rec")
    assert len(got) == 150
    for want, have in zip(samples, got, strict=True):
        assert have.sample.monotonic == want.monotonic  # bit for bit: rates are identical
        assert dict(have.sample.counters) == dict(want.counters)
        assert abs(have.sample.wall_time - want.wall_time) < 1e-6
    assert got[3].events[0]["kind"] == "device-added"
    assert got[5].processes == ({"pid": 5, "comm": "x"},)


def test_timeline_rates_are_the_live_rates(tmp_path: Path) -> None:
    samples = make_samples(130)
    write(tmp_path / "r.rec", samples)
    timeline = open_timeline(tmp_path / "r.rec")
    span = timeline.span()
    assert span is not None and span[0] == pytest.approx(T0)
    for k in (1, 19, 20, 21, 79, 80, 129):  # inside chunks and at their edges
        frame = timeline.frame_at(samples[k].wall_time)
        assert frame is not None
        assert dict(frame.rates) == rates_between(samples[k - 1], samples[k])
    first = timeline.frame_at(T0 - 100)
    assert first is not None and first.elapsed_s is None
    stepped = timeline.step(samples[10].wall_time, 60)
    assert stepped is not None and stepped.sample.wall_time == pytest.approx(samples[70].wall_time)
    assert len(timeline.window(samples[50].wall_time, 10)) == 10


def test_aggregate_interval_uses_the_raw_counter_pair(tmp_path: Path) -> None:
    samples = make_samples(100)
    write(tmp_path / "r.rec", samples)
    timeline = open_timeline(tmp_path / "r.rec", interval=10)
    frame = timeline.frame_at(samples[35].wall_time)
    assert frame is not None
    assert frame.sample.wall_time == pytest.approx(samples[30].wall_time)
    assert dict(frame.rates) == rates_between(samples[20], samples[30])


def test_a_torn_tail_reads_every_complete_sample_with_one_warning(tmp_path: Path) -> None:
    samples = make_samples(90)
    path = tmp_path / "r.rec"
    write(path, samples, close=False)
    size = path.stat().st_size
    os.truncate(path, size - 7)  # cut inside the last sample's processes frame
    warnings: list[str] = []
    got = read_all(path, warnings)
    assert len(got) == 90 and got[-1].processes is None and got[-2].processes is not None
    assert len(warnings) == 1 and "cut short or corrupt" in warnings[0]
    os.truncate(path, size - 120)  # now inside its disk frame: that sample is gone
    warnings.clear()
    got = read_all(path, warnings)
    assert len(got) == 89
    assert dict(got[-1].sample.counters) == dict(samples[88].counters)
    assert len(warnings) == 1


def test_flipped_bytes_in_a_middle_chunk_skip_only_that_chunk(tmp_path: Path) -> None:
    samples = make_samples(200)
    path = tmp_path / "r.rec"
    write(path, samples)
    rec = RecordingFile(path)
    middle = rec.chunks[1]
    data = bytearray(path.read_bytes())
    at = (middle.start + middle.trailer) // 2 if middle.trailer else middle.start + 100
    data[at] ^= 0xFF
    data[at + 1] ^= 0x55
    path.write_bytes(bytes(data))
    warnings: list[str] = []
    got = read_all(path, warnings)
    lost = middle.n
    assert len(got) == 200 - lost
    assert warnings and len(warnings) == 1
    walls = {round(s.sample.wall_time) for s in got}
    assert round(samples[-1].wall_time) in walls and round(samples[0].wall_time) in walls


def test_a_newer_version_gets_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "r.rec"
    write(path, make_samples(3))
    data = bytearray(path.read_bytes())
    data[8] = VERSION + 1
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=f"version {VERSION + 1} is newer than this iotop-plus"):
        RecordingFile(path)
    (tmp_path / "junk.rec").write_bytes(b"hello world, not a recording")
    with pytest.raises(FormatError, match="not an iotop-plus recording"):
        RecordingFile(tmp_path / "junk.rec")


def test_follow_mode_sees_samples_as_they_are_written(tmp_path: Path) -> None:
    samples = make_samples(30)
    path = tmp_path / "r.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    writer = ChunkWriter(fd, {"inventory": []})
    for s in samples[:5]:
        writer.append(RecordedSample(s))
    timeline = open_timeline(path, follow=True)
    span = timeline.span()
    assert span is not None
    seen = [f for _, f in timeline.frames(*span)]
    assert len(seen) == 5 and timeline.step(span[1], 1) in (None, seen[-1])  # nothing after
    for s in samples[5:25]:
        writer.append(RecordedSample(s))
    timeline.refresh()
    span = timeline.span()
    assert span is not None
    seen += [
        f
        for _, f in timeline.frames(*span, inclusive_start=False)
        if f.wall_time > seen[-1].wall_time
    ]
    os.close(fd)
    timeline.close()
    assert [round(f.wall_time) for f in seen] == [round(s.wall_time) for s in samples[:25]]
    assert seen[-1].elapsed_s == pytest.approx(1.000371)


def test_version_4_frame_parts_round_trip_and_unknown_types_are_skipped(tmp_path: Path) -> None:
    """Each part of ``RecordedSample.parts`` comes back with its sample; a record type this
    reader does not know (a later writer's part) is skipped, not an error."""
    from iotop_plus.record.format import record

    samples = make_samples(4, devices=2)
    path = tmp_path / "p.rec"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        writer = ChunkWriter(fd, {"host": "h", "kernel": "k", "zone": "UTC", "inventory": []})
        writer.append(RecordedSample(samples[0], parts={"M": {"dirty_kB": 12}}))
        writer.append(RecordedSample(samples[1]))
        # A later writer's part type: written by hand, as a future version would.
        original = ChunkEncoder._extras
        writer._encoder._extras = lambda rs: [*original(rs), record(b"q", b'{"later": 1}')]  # type: ignore[method-assign]
        writer.append(RecordedSample(samples[2], parts={"W": {"loop0": [{"pid": 7}]}}))
        writer.close_chunk()
    finally:
        os.close(fd)
    warnings: list[str] = []
    got = read_all(path, warnings)
    assert VERSION == 4
    assert [dict(s.parts) for s in got] == [
        {"M": {"dirty_kB": 12}},
        {},
        {"W": {"loop0": [{"pid": 7}]}},
    ]
    assert warnings == []
    with pytest.raises(ValueError, match="no recorded frame part"):
        ChunkEncoder._extras(RecordedSample(samples[3], parts={"Z": {}}))
