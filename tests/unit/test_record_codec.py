"""The disk codec: exact round trips, files of older versions read, small records."""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record import predict
from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.format import VERSION, Layout
from iotop_plus.record.predict import BUSY, CANDIDATES, ORDER, DiskCodec, DiskDecoder, pack, unpack
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.upgrade import Version2Decoder
from iotop_plus.sampling.disks.diskstats import IN_FLIGHT, IO_TICKS, TIME_IN_QUEUE, DiskCounters
from iotop_plus.sampling.disks.sampler import Sample
from tests.support.old_recordings import VERSIONS, fixture_samples, path_of

T0 = 1_700_000_000.0


def busy_samples(
    n: int, devices: int = 40, seed: int = 7, *, saturating: bool = False
) -> list[Sample]:
    """Correlated counters as a real busy disk gives them (sizes and latencies per device).

    ``saturating``: io ticks grow with the queue as a single server's do (busy most of a
    second when the queue is long, little when it is short), not by a constant 900 ms.
    """
    rng = random.Random(seed)
    values = [[rng.randint(10**6, 10**9) for _ in range(17)] for _ in range(devices)]
    iops = [rng.uniform(100, 20000) for _ in range(devices)]
    out = []
    for s in range(n):
        for d, v in enumerate(values):
            iops[d] = min(20000.0, max(100.0, iops[d] * rng.uniform(0.8, 1.2)))
            reads = int(iops[d] * 0.6)
            writes = int(iops[d]) - reads
            for k, inc in enumerate(
                (
                    reads,
                    reads // 9,
                    reads * 16,
                    int(reads * 0.7),
                    writes,
                    writes // 5,
                    writes * 64,
                    int(writes * 1.9),
                    0,
                    900,
                    int(reads * 0.7 + writes * 1.9),
                    writes // 40,
                    writes // 160,
                    writes // 40 * 256,
                    writes // 80,
                    writes // 50,
                    writes // 100,
                )
            ):
                v[k] += inc
            if saturating:
                queue_ms = int(reads * 0.7 + writes * 1.9)
                v[IO_TICKS] += 1000 * queue_ms // (queue_ms + 1000) - 900
            v[IN_FLIGHT] = int((reads * 0.7 + writes * 1.9) / 1000)
        counters = {
            f"sd{d}": DiskCounters(8, d, f"sd{d}", tuple(v), 17) for d, v in enumerate(values)
        }
        out.append(Sample(100.0 + s * 1.0003, T0 + s, MappingProxyType(counters)))
    return out


def write(path: Path, samples: list[Sample]) -> ChunkWriter:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        writer = ChunkWriter(fd, {"host": "h", "inventory": []}, sync=False)
        for s in samples:
            writer.append(RecordedSample(s))
        writer.close_chunk()
    finally:
        os.close(fd)
    return writer


def read_all(path: Path) -> list[Sample]:
    rec = RecordingFile(path)
    return [rs.sample for i in range(len(rec.chunks)) for rs in rec.samples(i)]


def test_the_current_version_reads_back_exactly(tmp_path: Path) -> None:
    samples = busy_samples(130)
    write(tmp_path / "r.rec", samples)
    rec = RecordingFile(tmp_path / "r.rec")
    assert rec.version == VERSION
    got = read_all(tmp_path / "r.rec")
    assert [dict(g.counters) for g in got] == [dict(s.counters) for s in samples]
    assert [g.monotonic for g in got] == [s.monotonic for s in samples]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_recording_of_an_older_version_reads_as_it_was_written(version: int) -> None:
    """Every sample of a file of version 1, 2 or 3 (tests/fixtures/recordings), counters
    exactly (a wrapping ms counter, one near 2^64, a reset), with its processes, pressure and
    events, in the chunks it was written in, and no frame parts."""
    rec = RecordingFile(path_of(version))
    assert rec.version == version
    assert [c.n for c in rec.chunks] == [8, 12, 12]
    got = [rs for i in range(len(rec.chunks)) for rs in rec.samples(i)]
    want = fixture_samples()
    assert [dict(g.sample.counters) for g in got] == [dict(w.sample.counters) for w in want]
    assert [(g.sample.monotonic, g.sample.wall_time) for g in got] == [
        (w.sample.monotonic, w.sample.wall_time) for w in want
    ]
    assert [(g.processes, g.pressure, g.events) for g in got] == [
        (w.processes, w.pressure, w.events) for w in want
    ]
    assert all(not g.parts for g in got)
    rec.close()


def test_busy_disks_take_a_third_less_than_the_first_codecs_records(tmp_path: Path) -> None:
    """Version 1's codec (one predictor per counter, fixed-width columns) wrote 11.2 bytes per
    device per sample of these samples; the current codec's per-column predictors and zigzag
    packing keep under three quarters of that."""
    samples = busy_samples(180)
    disks = write(tmp_path / "r.rec", samples).stats.disks
    assert disks / (180 * 40) < 0.75 * 11.2, disks


def test_io_ticks_of_a_saturating_device_are_predicted_from_its_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single server's busy time is neither the last delta of io ticks carried forward nor
    that delta scaled with the time in queue; the BUSY predictor follows it."""
    samples = busy_samples(180, saturating=True)
    with_busy = write(tmp_path / "busy.rec", samples).stats.disks
    got = read_all(tmp_path / "busy.rec")
    assert [dict(g.counters) for g in got] == [dict(s.counters) for s in samples]
    without = {**CANDIDATES, IO_TICKS: tuple(h for h in CANDIDATES[IO_TICKS] if h != BUSY)}
    monkeypatch.setattr(predict, "CANDIDATES", without)
    without_busy = write(tmp_path / "no-busy.rec", samples).stats.disks
    assert with_busy < 0.95 * without_busy, (with_busy, without_busy)  # 0.89 on these samples
    monkeypatch.undo()
    layout = Layout(("a",), (8,), (0,), (17,))
    enc = DiskCodec(layout)
    cols = [[10**6] for _ in range(17)]
    enc.keyframe(cols)
    queue, ticks = 10**6, 10**6
    for queue_ms in (2000, 500):  # busy 666 ms, then 333 ms of the 1,000 ms interval
        cols = [[c[0] + 500] for c in cols]
        queue, ticks = queue + queue_ms, ticks + 1000 * queue_ms // (queue_ms + 1000)
        cols[TIME_IN_QUEUE], cols[IO_TICKS] = [queue], [ticks]
        enc.encode(cols, 1000)
    assert enc._choice[IO_TICKS] == BUSY


@pytest.mark.parametrize(
    "values",
    [
        [],
        [0],
        [1, -1, 0, 1, -2],
        [7, -8, 3],
        [300, -5, 0],
        [2**40, -(2**40)],
        [2**63 - 1, -(2**63)],
        [2**64 + 3, -(2**70), 5],
    ],
)
def test_pack_round_trips_every_width(values: list[int]) -> None:
    data = b"xx" + pack(values) + b"yy"
    got, end = unpack(data, 2, len(values))
    assert got == values
    assert data[end:] == b"yy"


def test_counters_that_go_back_and_wrap_round_trip() -> None:
    rng = random.Random(1)
    layout = Layout(("a", "b", "c"), (8, 8, 8), (0, 1, 2), (17, 17, 17))
    cols = [[rng.randint(0, 2**64 - 1) for _ in range(3)] for _ in range(17)]
    enc, dec = DiskCodec(layout), DiskDecoder(layout)
    dec.decode_keyframe(enc.keyframe(cols), 0)
    for _ in range(50):
        cols = [[(v + rng.randint(-(10**6), 10**9)) % 2**64 for v in col] for col in cols]
        ms = rng.randint(0, 3000)
        assert dec.decode(enc.encode(cols, ms), 0, ms) == cols


def test_a_predictor_the_column_may_not_use_is_refused() -> None:
    layout = Layout(("a",), (8,), (0,), (17,))
    enc, dec = DiskCodec(layout), DiskDecoder(layout)
    cols = [[5] for _ in range(17)]
    dec.decode_keyframe(enc.keyframe(cols), 0)
    body = bytearray(enc.encode([[9] for _ in range(17)], 1000))
    assert body[0] in CANDIDATES[ORDER[0]]
    body[0] = 99
    with pytest.raises(ValueError, match="bad predictor 99"):
        dec.decode(bytes(body), 0, 1000)


def test_a_version_2_reader_refuses_the_busy_predictor_version_2_did_not_have() -> None:
    layout = Layout(("a",), (8,), (0,), (17,))
    enc, dec = DiskCodec(layout), Version2Decoder(layout)
    cols = [[5] for _ in range(17)]
    dec.decode_keyframe(enc.keyframe(cols), 0)
    body = bytearray(enc.encode([[9] for _ in range(17)], 1000))
    pos = 0
    for k in ORDER:  # find io ticks' predictor byte: every column here packs as crumbs
        if k == IO_TICKS:
            break
        pos += 2 + 1  # predictor, packing code, one byte of crumbs
    body[pos] = BUSY
    with pytest.raises(ValueError, match=f"bad predictor {BUSY} for column {IO_TICKS}"):
        dec.decode(bytes(body), 0, 1000)
