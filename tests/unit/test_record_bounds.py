"""What a reader builds from a chunk's stream is bounded, whatever the stream holds: empty or
tiny records, huge parts, many devices. Each bound cuts the chunk with one line naming it and
keeps the samples before; memory is measured with tracemalloc (the peak while decoding)."""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.record.format import MAX_DEVICES, record
from iotop_plus.record.stream import (
    MAX_CHUNK_COST,
    MAX_COMMAND_LINES,
    MAX_RECORDS_PER_FRAME,
    bounded_part,
    decode_stream,
)
from iotop_plus.sampling.processes.issuers import TOP
from tests.support.hostile_parts import (
    huge_health,
    huge_part,
    many_devices,
    stream_records,
    write_parts_recording,
)
from tests.support.hostile_recordings import parse, raw_deflate_repeated, raw_deflate_zeros

MIB = 1 << 20


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("base") / "p.rec"
    write_parts_recording(path, 60)
    return path.read_bytes()


def _pieces_of(data: bytes) -> list[bytes]:
    """The ``S``/``X`` payloads of a file's first chunk."""
    out: list[bytes] = []
    for f in parse(data)[1]:
        if f.kind == b"T" and out:
            break
        if f.kind in (b"S", b"X"):
            out.append(f.payload)
    return out


def _decoded(pieces: list[bytes]) -> tuple[list[Any], list[str], float]:
    """The samples, the warnings, and the peak memory of decoding (MiB)."""
    warnings: list[str] = []
    tracemalloc.start()
    try:
        samples = decode_stream(pieces, "f.rec", warnings.append, 4)
        peak = tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()
    return samples, warnings, peak


def _first_piece(base: bytes) -> bytes:
    """The first sample's pieces, so a stream can start with a real sample."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = b"".join(record(k, b) for k, b in stream_records(base)[:8])
    return c.compress(first) + c.flush(zlib.Z_FULL_FLUSH)


def test_sixteen_mebibytes_of_empty_records_cost_nothing(base: bytes) -> None:
    # 3.3 million empty records a frame, 13 frames: 924 MB when the records were listed.
    samples, warnings, peak = _decoded([_first_piece(base), *[raw_deflate_zeros(16 * MIB)] * 13])
    assert len(samples) == 1
    assert warnings == ["f.rec: a chunk holds an empty record; read its first 1 samples"]
    assert peak < 64, f"peak {peak:.0f} MiB"


def test_millions_of_tiny_records_stop_at_the_records_a_frame_bound(base: bytes) -> None:
    block = record(b"z", b"\0") * (MIB // 6)
    samples, warnings, peak = _decoded([_first_piece(base), raw_deflate_repeated(block, 15)])
    assert len(samples) == 1
    assert warnings == [
        f"f.rec: a chunk holds more than {MAX_RECORDS_PER_FRAME} records a frame; "
        "read its first 1 samples"
    ]
    assert peak < 64, f"peak {peak:.0f} MiB"


@pytest.mark.parametrize(
    ("craft", "words"),
    [
        (huge_part, "a record longer than 16 MiB"),
        (lambda b: huge_part(b, size=15 * MIB), "over 4 MiB each"),
        (huge_health, "over 4 MiB each"),
    ],
)
def test_a_huge_part_is_left_out_with_one_line(
    base: bytes, craft: Callable[[bytes], bytes], words: str
) -> None:
    data = craft(base)
    assert len(data) < MIB
    samples, warnings, peak = _decoded(_pieces_of(data))
    assert samples and len(warnings) == 1 and words in warnings[0], warnings
    assert peak < 96, f"peak {peak:.0f} MiB"


@pytest.mark.slow  # 100,000 devices decoded under tracemalloc: seconds
def test_a_chunk_of_many_devices_is_cut_at_its_memory_bound(base: bytes) -> None:
    samples, warnings, peak = _decoded(_pieces_of(many_devices(base, MAX_DEVICES, 3)))
    assert len(samples) == 1  # the first sample is always kept
    assert any(f"more than {MAX_CHUNK_COST >> 20} MiB; read its first 1" in w for w in warnings)
    assert peak < 256, f"peak {peak:.0f} MiB"
    cut = _decoded(_pieces_of(many_devices(base, 20_000, 10)))[0]
    assert 1 < len(cut) < 10  # 20 MiB a sample (estimated): three fit


def test_parts_are_cut_to_what_their_sample_shows() -> None:
    devices = {"sda": 1, "sdb": 2}
    many = {f"d{i}": [{"pid": i}] * 50 for i in range(100_000)}
    w = bounded_part(
        "W", {"source": "tracer", "devices": {**many, "sda": [{"pid": 1}] * 50}}, devices
    )
    assert list(w["devices"]) == ["sda"] and len(w["devices"]["sda"]) == TOP
    h = bounded_part("H", {"devices": {key: {} for key in many}, "io_errors": {"sdb": 1}}, devices)
    assert h == {"devices": {}, "io_errors": {"sdb": 1}}
    rows = [{"path": f"/c{i}", "devices": {"sda": [1], "x": [2]}} for i in range(500)]
    c = bounded_part("C", {"cgroups": rows}, devices)
    assert len(c["cgroups"]) == 50 and c["cgroups"][0]["devices"] == {"sda": [1]}
    n = bounded_part("N", [{"pid": i, "cmdline": "x"} for i in range(10_000)], devices)
    assert len(n) == MAX_COMMAND_LINES
    lim = bounded_part(
        "L", {f"/c{i}": {f"8:{k}": {} for k in range(100)} for i in range(5000)}, devices
    )
    assert len(lim) == 1000 and all(len(v) == 2 for v in lim.values())
    assert bounded_part("W", {"loop0": []}, devices) == {"loop0": []}  # not its shape: as is


def test_decoded_chunks_kept_for_reuse_stay_within_their_bound(tmp_path: Path) -> None:
    from iotop_plus.record import reader

    path = tmp_path / "r.rec"
    write_parts_recording(path, 600)  # ten minutes: ten chunks
    rec = reader.RecordingFile(path)
    try:
        for i in range(len(rec.chunks)):
            rec.samples(i)
        cache = reader._CACHE
        assert 0 < cache._cost <= reader.MAX_CACHED_COST
        assert len(cache._items) <= reader.MAX_CACHED_CHUNKS
    finally:
        rec.close()
    assert not [k for k in reader._CACHE._items if k[0] == rec._owner]  # dropped on close
