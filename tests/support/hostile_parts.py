"""Version-4 recordings with every frame part, and crafted files that cost a reader time or
memory out of proportion to their size (each well under 1 MB on disk).

:func:`write_parts_recording` writes a real recording (the real :class:`ChunkWriter`) whose
samples carry all six JSON frame parts in the shapes the recorder writes. The crafted files
start from such a recording and replace a frame or the records of its first chunk, with CRCs
and trailer offsets fixed (:func:`~tests.support.hostile_recordings.build`), so the damage
reaches the decoding behind the checks.
"""

from __future__ import annotations

import json
import os
import random
import struct
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from iotop_plus.record.chunks import ChunkWriter, RecordedSample, bits_float, float_bits
from iotop_plus.record.format import RECORD, record
from tests.support.hostile_recordings import (
    T0,
    Frame,
    build,
    parse,
    raw_deflate_repeated,
    raw_deflate_zeros,
    small_samples,
    with_frame,
)

MIB = 1 << 20


def parts_of(i: int, rng: random.Random) -> dict[str, Any]:
    """The six frame parts of sample ``i``, in the shapes the recorder writes."""
    issuer = {
        "pid": 100 + i, "comm": "fio", "cmdline": "fio --name=x", "cgroup": "/system.slice/a",
        "cgroup_source": "v2", "r/s": 12.5, "w/s": 3.0, "rkB/s": 50.0, "wkB/s": 12.0,
        "latency": {"read": {"p50_ms": 0.1, "p99_ms": 0.9, "max_ms": 2.0},
                    "write": {"p50_ms": 0.2, "p99_ms": 1.1, "max_ms": 3.0}},
    }  # fmt: skip
    kernel = {**issuer, "pid": None, "comm": "kernel", "cmdline": None, "writeback": True}
    return {
        "C": {
            "version": "v2",
            "root": "/sys/fs/cgroup",
            "cgroups": [
                {
                    "path": "/system.slice/a",
                    "devices": {"sda": [1024.0 * i, 0.0, 4.0, 0.0, 0.0, 0.0]},
                    "some": 1.5,
                    "full": 0.5,
                }
            ],
        },
        "H": {
            "devices": {
                "sda": {"source": "smartctl", "passed": True, "percentage_used": 3, "age_s": 1.0}
            },
            "io_errors": {"sda": i % 3},
            "io_error_source": "kmsg",
            "problem": None,
            "new_errors": {},
            "grown": {"sda": {"media_errors": [0, 1]}} if i % 5 == 4 else {},
            "wall": T0 + i,
        },
        "L": {"/system.slice/a": {"8:0": {"rbps": 10 * MIB, "wbps": None, "riops": None}}},
        "M": {"dirty_kB": rng.randint(0, 10**6), "writeback_kB": rng.randint(0, 1000)},
        "N": [{"pid": 100 + i, "cmdline": "fio --name=x --rw=randread"}],
        "W": {"source": "tracer", "status": None, "devices": {"sda": [issuer, kernel]}},
    }


def write_parts_recording(path: Path, n: int = 60, seed: int = 9) -> None:
    """A version-4 recording of ``n`` samples over about a minute, each with every part."""
    rng = random.Random(seed)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    header = {
        "format": "iotop-plus recording", "version": 4, "host": "fuzzhost", "kernel": "6.18",
        "zone": "UTC", "utc_offset_s": 0, "started_ns": int(T0 * 1e9), "interval_s": 1.0,
        "pid": 42, "seq": 1, "inventory": [{"name": "sda", "major": 8, "minor": 0}],
        "queue": {"sda": {"scheduler": "none", "read_ahead_kb": 128, "nr_requests": 64}},
    }  # fmt: skip
    try:
        writer = ChunkWriter(fd, header, sync=False)
        for i, s in enumerate(small_samples(n)):
            procs = ({"pid": 100 + i, "comm": "dd", "read_bytes": i * 4096, "write_bytes": 0},)
            writer.append(RecordedSample(s, processes=procs, parts=parts_of(i, rng)))
        writer.close_chunk()
    finally:
        os.close(fd)


def stream_records(data: bytes, chunk: int = 0) -> list[tuple[bytes, bytes]]:
    """The records of chunk ``chunk``'s stream."""
    _, frames, _ = parse(data)
    groups = _chunk_frames(frames)
    d = zlib.decompressobj(-15)
    raw = b"".join(d.decompress(frames[i].payload) for i in groups[chunk])
    out, pos = [], 0
    while pos + RECORD.size <= len(raw):
        length, kind = RECORD.unpack_from(raw, pos)
        out.append((kind, raw[pos + RECORD.size : pos + RECORD.size + length]))
        pos += RECORD.size + length
    return out


def _chunk_frames(frames: list[Frame]) -> list[list[int]]:
    out: list[list[int]] = [[]]
    for i, f in enumerate(frames):
        if f.kind in (b"S", b"X"):
            out[-1].append(i)
        elif f.kind in (b"T", b"I") and out[-1]:
            out.append([])
    return [c for c in out if c]


def with_stream(data: bytes, pieces: Iterable[bytes], chunk: int = 0) -> bytes:
    """``data`` with chunk ``chunk``'s ``S``/``X`` frames replaced by ``pieces`` (pieces of one
    raw-deflate stream, one frame each)."""
    prefix, frames, tail = parse(data)
    group = _chunk_frames(frames)[chunk]
    first = frames[group[0]]
    new = [Frame(first.offset if j == 0 else -1 - j, b"S", p) for j, p in enumerate(pieces)]
    kept = [f for i, f in enumerate(frames) if i not in set(group)]
    at = group[0] - sum(1 for i in group if i < group[0])
    return build(prefix, kept[:at] + new + kept[at:], tail)


def deflate_pieces(raw_blocks: Iterable[bytes]) -> list[bytes]:
    """Each block compressed as one piece of a single raw-deflate stream."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return [c.compress(b) + c.flush(zlib.Z_SYNC_FLUSH) for b in raw_blocks]


# --- crafted files ---------------------------------------------------------------------------

UNTERMINATED = b"[" * 65 + b'"' + b'\\"' * 500_000
"""About 1 MB of JSON: 65 brackets and an unterminated run of escaped quotes."""


def deep_unterminated_header(base: bytes) -> bytes:
    """The header is :data:`UNTERMINATED`."""
    return with_frame(base, b"H", zlib.compress(UNTERMINATED, 9))


def deep_unterminated_part(base: bytes) -> bytes:
    """A ``W`` part of each sample of the first chunk is :data:`UNTERMINATED`."""
    records = [(k, UNTERMINATED if k == b"W" else b) for k, b in stream_records(base)]
    return with_stream(base, deflate_pieces(record(k, b) for k, b in records))


def empty_records(base: bytes, frames: int = 13) -> bytes:
    """The first chunk's stream is ``frames`` frames of 16 MiB of zero bytes: 3.3 million empty
    records each."""
    return with_stream(base, [raw_deflate_zeros(16 * MIB)] * frames)


def tiny_records(base: bytes, frames: int = 13) -> bytes:
    """The first chunk's stream is ``frames`` frames each of 15 MiB of 6-byte records of a type
    readers skip."""
    block = record(b"z", b"\0") * (MIB // 6)
    return with_stream(base, [raw_deflate_repeated(block, 15)] * frames)


def huge_part(base: bytes, kind: bytes = b"W", size: int = 177 * MIB) -> bytes:
    """After the first sample's disk record, one ``kind`` record of ``size`` bytes of JSON
    (issuers of one device, repeated), spread over frames of 8 MiB each."""
    records = stream_records(base)
    entry = json.dumps({"pid": 1, "comm": "x", "r/s": 1.0}).encode() + b","
    head = b'{"source":"tracer","devices":{"sda":['
    tail = b'{"pid":2,"comm":"y"}]}}'
    n = (size - len(head) - len(tail)) // len(entry)
    body_len = len(head) + n * len(entry) + len(tail)
    per_block = (8 * MIB) // len(entry)
    blocks: list[bytes] = [record(*records[0]) + RECORD.pack(body_len, kind) + head]
    done = 0
    while done < n:
        k = min(per_block, n - done)
        blocks.append(entry * k)
        done += k
    blocks.append(tail + b"".join(record(k, b) for k, b in records[1:]))
    return with_stream(base, deflate_pieces(blocks))


def huge_health(base: bytes, devices: int = 100_000) -> bytes:
    """The first sample's ``H`` part holds ``devices`` devices (the later samples' parts
    are as written: a reader takes the first for them until the next)."""
    doc = {
        "devices": {
            f"d{i}": {"source": "smartctl", "passed": True, "percentage_used": 3, "age_s": 1.0}
            for i in range(devices)
        },
        "io_errors": {f"d{i}": 1 for i in range(devices)},
        "grown": {f"d{i}": {"media_errors": [0, 1]} for i in range(devices)},
    }
    text = json.dumps(doc, separators=(",", ":")).encode()
    records = stream_records(base)
    first = next(i for i, (k, _) in enumerate(records) if k == b"H")
    records[first] = (b"H", text)
    return with_stream(base, deflate_pieces(record(k, b) for k, b in records))


def many_devices(base: bytes, devices: int = 100_000, samples: int = 60) -> bytes:
    """The first ``samples`` samples of the first chunk list ``devices`` devices (all counters
    zero): each disk record becomes a keyframe of them (the samples after them are left out)."""
    records = stream_records(base)
    (length,) = struct.unpack_from("<I", records[0][1])
    head = json.loads(records[0][1][4 : 4 + length])
    head["layout"] = [[f"d{i}", 8, i, 17] for i in range(devices)]
    zero = b"\x01" + bytes(devices)  # a column of one-byte zeros
    out = []
    n = 0
    for k, b in records:
        if k in (b"K", b"D") and n == samples:
            break
        if k in (b"K", b"D"):
            head["wall_ns"] += 10**9 * (n > 0)
            head["mono_bits"] = float_bits(bits_float(head["mono_bits"]) + (n > 0))
            text = json.dumps(head, separators=(",", ":")).encode()
            out.append((b"K", struct.pack("<I", len(text)) + text + zero * 17))
            n += 1
        else:
            out.append((k, b))
    return with_stream(base, deflate_pieces(record(k, b) for k, b in out))


CRAFTED: dict[str, Callable[[bytes], bytes]] = {
    "deep-unterminated-header": deep_unterminated_header,
    "deep-unterminated-part": deep_unterminated_part,
    "empty-records": empty_records,
    "tiny-records": tiny_records,
    "huge-part": huge_part,
    "huge-health": huge_health,
    "many-devices": many_devices,
}
"""Each crafted file by name, made from a recording of :func:`write_parts_recording`."""
