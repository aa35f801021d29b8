"""Hostile and corrupt copies of a real recording, for the reader's fuzz tests.

A recording is parsed into its frames; a mutation changes bytes, frames, header values,
trailer fields or the records inside a chunk's stream, and the file is built again with every
frame CRC and every trailer offset recomputed, so the damage reaches the code behind the CRC
checks (JSON, types, lengths, times) and not only the CRC check itself.
"""

from __future__ import annotations

import functools
import json
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.format import (
    FILE_PREFIX,
    FRAME,
    RECORD,
    TRAILER,
    TRAILER_END,
    TRAILER_MAGIC,
    VERSION,
    crc,
)
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample

T0 = 1_700_000_030.5


def small_samples(n: int, devices: int = 4, seed: int = 5) -> list[Sample]:
    """Counters of ``devices`` disks; a fifth disk appears halfway (an inventory change)."""
    rng = random.Random(seed)
    values = {f"sd{chr(97 + i)}": [rng.randint(0, 10**6) for _ in range(17)] for i in range(5)}
    out = []
    for s in range(n):
        for v in values.values():
            for k in range(17):
                v[k] = v[k] + rng.randint(0, 5000) if k != 8 else rng.randint(0, 9)
        names = list(values)[: devices + (1 if s >= n // 2 else 0)]
        counters = {
            name: DiskCounters(8, 16 * i, name, tuple(values[name]), 17)
            for i, name in enumerate(names)
        }
        out.append(Sample(500.25 + s * 1.0007, T0 + s, MappingProxyType(counters)))
    return out


def write_small_recording(path: Path, n: int = 100) -> None:
    """A recording over three minutes with processes, pressure, events and an ``I`` frame."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    inv = [{"name": "sda", "major": 8, "minor": 0, "kind": "disk"}]
    header = {
        "format": "iotop-plus recording",
        "version": VERSION,
        "host": "fuzzhost",
        "kernel": "6.18",
        "zone": "Europe/Paris",
        "utc_offset_s": 3600,
        "started_ns": int(T0 * 1e9),
        "interval_s": 1.0,
        "pid": 42,
        "seq": 7,
        "inventory": inv,
        "queue": {"sda": {"scheduler": "none", "read_ahead_kb": 128, "nr_requests": 64}},
    }
    try:
        writer = ChunkWriter(fd, header, sync=False)
        for i, s in enumerate(small_samples(n)):
            if i == n // 2:
                writer.inventory({"inventory": inv * 2, "queue": {}})
            events: tuple[dict[str, object], ...] = ()
            if i % 17 == 3:
                events = (
                    {"source": "device", "kind": "device-added", "text": "sde", "device": "sde"},
                    {
                        "source": "changes",
                        "record": {
                            "device": "sda",
                            "setting": "read_ahead_kb",
                            "old": 128,
                            "new": 256,
                            "kind": "intent",
                        },
                    },
                )
            writer.append(
                RecordedSample(
                    s,
                    processes=(
                        {
                            "pid": 100 + i,
                            "comm": "dd",
                            "read_bytes": i * 4096,
                            "write_bytes": 0,
                            "read_bps": 4096.0,
                            "write_bps": 0.0,
                        },
                    ),
                    pressure={
                        "io": {
                            "some": {
                                "avg10": 1.0,
                                "avg60": 0.5,
                                "avg300": 0.1,
                                "total_us": 1000 + i,
                            },
                            "full": None,
                        }
                    },
                    events=events,
                )
            )
        writer.close_chunk()
    finally:
        os.close(fd)


@dataclass
class Frame:
    offset: int
    kind: bytes
    payload: bytes


def parse(data: bytes) -> tuple[bytes, list[Frame], bytes]:
    """The file prefix, its intact frames, and whatever follows them."""
    pos = FILE_PREFIX.size
    frames = []
    while pos + FRAME.size <= len(data):
        kind, length, _ = FRAME.unpack_from(data, pos)
        end = pos + FRAME.size + length
        if end > len(data):
            break
        frames.append(Frame(pos, kind, data[pos + FRAME.size : end]))
        pos = end
    return data[: FILE_PREFIX.size], frames, data[pos:]


def build(prefix: bytes, frames: list[Frame], tail: bytes = b"") -> bytes:
    """The file of ``frames``, with CRCs and trailer offsets (start, inventory, length) fixed."""
    where: dict[int, int] = {}
    pos = len(prefix)
    for f in frames:
        where[f.offset] = pos
        pos += FRAME.size + len(f.payload)
    out = [prefix]
    for f in frames:
        payload = f.payload
        if f.kind == b"T" and len(payload) >= TRAILER.size + TRAILER_END.size:
            start, inv, first, last, n, scrc = TRAILER.unpack_from(payload)
            body = TRAILER.pack(where.get(start, start), where.get(inv, inv), first, last, n, scrc)
            body += payload[TRAILER.size : -TRAILER_END.size]
            total = FRAME.size + len(body) + TRAILER_END.size
            payload = body + TRAILER_END.pack(total, TRAILER_MAGIC)
        out.append(FRAME.pack(f.kind, len(payload), crc(payload)) + payload)
    return b"".join(out) + tail


DEEP = b"[" * 5000 + b"]" * 5000
"""Nested deeper than any parser's recursion limit."""


def hostile_json(rng: random.Random) -> bytes:
    """A JSON text of a surprising type or size."""
    choices: list[bytes] = [
        b"null",
        b"true",
        b"-1",
        b"0",
        b"1e308",
        b"-1e308",
        b"NaN",
        b"Infinity",
        b"-Infinity",
        str(2**70).encode(),
        str(-(2**70)).encode(),
        b'""',
        b'"x"',
        b'"' + b"9" * 5000 + b'"',
        b"[]",
        b"{}",
        b"[1,2,3]",
        b'{"a":{"b":[1]}}',
        b'[["x",1,2,3]]',
        b'"../../etc/passwd"',
        b"1.5",
        b"[null]",
        b'{"some":1}',
        b"9" * 5000,
        DEEP,
        b'{"a":' * 3000 + b"1" + b"}" * 3000,
    ]
    return rng.choice(choices)


def hostile_doc(doc: object, rng: random.Random) -> bytes:
    """``doc`` as JSON with one value somewhere replaced by :func:`hostile_json`."""
    text = json.dumps(doc, separators=(",", ":")).encode()
    if not isinstance(doc, dict) or not doc or rng.random() < 0.15:
        return hostile_json(rng)
    key = rng.choice(list(doc))
    marker = "\x00HOSTILE\x00"
    copy = dict(doc)
    value = copy[key]
    if isinstance(value, list) and value and isinstance(value[0], dict) and rng.random() < 0.5:
        row = dict(value[0])
        if row:
            row[rng.choice(list(row))] = marker
        copy[key] = [row, *value[1:]]
    elif isinstance(value, dict) and value and rng.random() < 0.5:
        inner = dict(value)
        inner[rng.choice(list(inner))] = marker
        copy[key] = inner
    else:
        copy[key] = marker
    text = json.dumps(copy, separators=(",", ":")).encode()
    return text.replace(json.dumps(marker).encode(), hostile_json(rng), 1)


def _chunks(frames: list[Frame]) -> list[list[int]]:
    """Indexes of the ``S``/``X`` frames of each chunk."""
    out: list[list[int]] = [[]]
    for i, f in enumerate(frames):
        if f.kind in (b"S", b"X"):
            out[-1].append(i)
        elif f.kind in (b"T", b"I") and out[-1]:
            out.append([])
    return [c for c in out if c]


def _records(raw: bytes) -> list[tuple[bytes, bytes]]:
    out, pos = [], 0
    while pos + RECORD.size <= len(raw):
        length, kind = RECORD.unpack_from(raw, pos)
        out.append((kind, raw[pos + RECORD.size : pos + RECORD.size + length]))
        pos += RECORD.size + length
    return out


def _mutate_record(kind: bytes, body: bytes, rng: random.Random) -> tuple[bytes, bytes]:
    if kind in (b"P", b"R", b"E"):
        return kind, hostile_doc(json.loads(body), rng)
    if kind == b"K" and rng.random() < 0.6:
        (n,) = struct.unpack_from("<I", body)
        head = json.loads(body[4 : 4 + n])
        text = hostile_doc(head, rng)
        return kind, struct.pack("<I", len(text)) + text + body[4 + n :]
    data = bytearray(body)
    how = rng.randrange(4)
    if how == 0 and data:
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == 1:
        data = data[: rng.randrange(len(data) + 1)]
    elif how == 2 and len(data) >= 16:  # the time deltas of a D record, or the K length
        data[:8] = struct.pack("<q", rng.choice([-(2**63), 2**63 - 1, 0, -(10**18), 10**18]))
    else:
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
    return kind, bytes(data)


def _restream(records: list[tuple[bytes, bytes]], lie: int | None = None) -> list[bytes]:
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    pieces = []
    for kind, body in records:
        length = len(body) if lie is None else lie
        raw = RECORD.pack(length, kind) + body
        pieces.append(comp.compress(raw) + comp.flush(zlib.Z_SYNC_FLUSH))
    return pieces


@functools.cache
def bombs() -> tuple[bytes, bytes]:
    """24 MiB of zeros compressed: as zlib data (about 24 KB) and as a raw-deflate piece."""
    zeros = b"\0" * (24 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return zlib.compress(zeros, 9), c.compress(zeros) + c.flush(zlib.Z_SYNC_FLUSH)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One hostile or corrupt copy of the recording ``data``."""
    prefix, frames, tail = parse(data)
    how = rng.randrange(10)
    if how == 0:  # raw bit rot: CRCs catch it
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if how == 1:  # cut short, or junk spliced in
        cut = rng.randrange(len(data))
        if rng.random() < 0.5:
            return data[:cut]
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return data[:cut] + junk + data[cut + rng.randint(0, 64) :]
    if how == 2:  # a header value of the wrong type or size
        doc = json.loads(zlib.decompress(frames[0].payload))
        text = hostile_doc(doc, rng)
        frames[0].payload = zlib.compress(text) if rng.random() < 0.9 else text
        return build(prefix, frames, tail)
    if how == 3:  # bytes flipped inside a frame, CRC made right
        f = rng.choice(frames)
        flipped = bytearray(f.payload)
        for _ in range(rng.randint(1, 8)):
            if flipped:
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        f.payload = bytes(flipped)
        return build(prefix, frames, tail)
    if how == 4:  # trailer fields that lie
        trailers = [f for f in frames if f.kind == b"T"]
        t = rng.choice(trailers)
        fields = list(TRAILER.unpack_from(t.payload))
        k = rng.randrange(6)
        extremes = {
            0: [0, 2**64 - 1, t.offset, t.offset + 1, 16],
            1: [0, 2**64 - 1, t.offset],
            2: [-(2**63), 2**63 - 1, 0, -1],
            3: [-(2**63), 2**63 - 1, 0],
            4: [0, 2**32 - 1],
            5: [0, 2**32 - 1],
        }
        fields[k] = rng.choice(extremes[k])
        body = TRAILER.pack(*fields) + t.payload[TRAILER.size : -TRAILER_END.size]
        if rng.random() < 0.3:  # a roll-up of the wrong shape
            body = TRAILER.pack(*fields) + zlib.compress(hostile_json(rng))
        total = FRAME.size + len(body) + TRAILER_END.size
        if rng.random() < 0.2:
            total = rng.choice([0, 1, 2**32 - 1, len(data)])
        payload = body + TRAILER_END.pack(total, TRAILER_MAGIC)
        if rng.random() < 0.2:
            payload = payload[: rng.randrange(len(payload))]
        out = bytearray(build(prefix, frames, tail))
        at = next(i for i, f in enumerate(frames) if f is t)
        rebuilt = parse(bytes(out))[1][at]
        fixed = FRAME.pack(b"T", len(payload), crc(payload)) + payload
        end = rebuilt.offset + FRAME.size + len(rebuilt.payload)
        return bytes(out[: rebuilt.offset]) + fixed + bytes(out[end:])
    if how == 5:  # an inventory frame of the wrong shape
        inv = [f for f in frames if f.kind == b"I"]
        if inv:
            target = rng.choice(inv)
            text = hostile_doc(json.loads(zlib.decompress(target.payload)), rng)
            target.payload = zlib.compress(text) if rng.random() < 0.8 else text
        return build(prefix, frames, tail)
    if how == 6:  # a decompression bomb in a frame
        f = rng.choice([f for f in frames if f.kind in (b"H", b"I", b"S", b"T")])
        bomb, raw_bomb = bombs()
        if f.kind == b"S":
            f.payload = raw_bomb
        elif f.kind == b"T":
            facts = TRAILER.unpack_from(f.payload)
            f.payload = TRAILER.pack(*facts) + bomb + TRAILER_END.pack(0, TRAILER_MAGIC)
        else:
            f.payload = bomb
        return build(prefix, frames, tail)
    # how 7-9: records inside a chunk's stream, well compressed and CRC'd
    chunks = _chunks(frames)
    chunk = rng.choice(chunks)
    d = zlib.decompressobj(-15)
    raw = b"".join(d.decompress(frames[i].payload) for i in chunk)
    records = _records(raw)
    lie = None
    if how == 7:
        k = rng.randrange(len(records))
        records[k] = _mutate_record(*records[k], rng)
    elif how == 8:
        rng.shuffle(records)
        if rng.random() < 0.3:
            records = [r for r in records if r[0] != b"K"]
    else:
        lie = rng.choice([0, 2**32 - 1, 2**31, 3])
        records = records[: rng.randint(1, len(records))]
    pieces = _restream(records, lie)
    first = chunk[0]
    new = [Frame(frames[first].offset, b"S", p) for p in pieces]
    keep = [f for i, f in enumerate(frames) if i not in set(chunk)]
    pos = (
        next(i for i, f in enumerate(keep) if f.offset > frames[first].offset)
        if any(f.offset > frames[first].offset for f in keep)
        else len(keep)
    )
    # Offsets of the new frames stand in for the chunk's first frame (the trailer points there).
    for j, f in enumerate(new):
        f.offset = frames[first].offset if j == 0 else -1 - j
    return build(prefix, keep[:pos] + new + keep[pos:], tail)


Mutator = Callable[[bytes, random.Random], bytes]


def raw_deflate_zeros(total: int, block: int = 1 << 20) -> bytes:
    """A raw-deflate piece (ended by a flush, as a recording's ``S`` frames are) that inflates
    to ``total`` zero bytes, built from one compressed block repeated: about 1 KB a MiB."""
    return raw_deflate_repeated(b"\0" * block, total // block)


def raw_deflate_repeated(block: bytes, times: int) -> bytes:
    """A raw-deflate piece that inflates to ``block`` ``times`` over, built from one
    compressed block repeated (each ended by a full flush, so the compressor's state repeats);
    pieces made by it follow each other in one stream."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(block) + c.flush(zlib.Z_FULL_FLUSH) == again  # the state repeats
    return first + again * (times - 1) if times > 1 else first


def zlib_zeros(total: int, block: int = 1 << 20) -> bytes:
    """zlib data (header, blocks, Adler-32) that inflates to ``total`` zero bytes."""
    adler = 1
    zeros = b"\0" * block
    for _ in range(total // block):
        adler = zlib.adler32(zeros, adler)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    end = c.flush(zlib.Z_FINISH)
    return b"\x78\xda" + raw_deflate_zeros(total, block) + end + struct.pack(">I", adler)


def with_frame(data: bytes, kind: bytes, payload: bytes, which: int = 0) -> bytes:
    """``data`` with the ``which``-th frame of ``kind`` given ``payload`` (CRCs and trailer
    offsets fixed)."""
    prefix, frames, tail = parse(data)
    target = [f for f in frames if f.kind == kind][which]
    target.payload = payload
    return build(prefix, frames, tail)
