"""A recording's bytes do not depend on how fast its codec is: the same samples give the same
file, byte for byte, whatever the encoder's inner workings (recordings written by an older
build and by this one are identical). The digests were taken from files the codec wrote
before it was sped up; a change of the format itself changes them on purpose."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.format import Layout
from iotop_plus.record.predict import DiskCodec, DiskDecoder
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample
from tests.support.recorded_load import Load, write_recording

RECORDINGS = {
    "busy": (
        lambda: Load(40, seed=3),
        150,
        "6397375b8c0f6984b905f7f7e66c0e525bc05b51a163b9f3f163e6e3424aa79b",
    ),
    "noisy, some idle": (
        lambda: Load(40, seed=5, noisy=True, idle=6),
        150,
        "15ddeb97eebce06090814a24cd371812405af170620b87b371bf424dd71d88d6",
    ),
    "steady": (
        lambda: Load(7, seed=9, steady=True),
        130,
        "df70a9bf7bad0ba22c2ea8e92fc1f62d6fd2ee83a7edf3949cb10c290b54af11",
    ),
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", list(RECORDINGS))
def test_a_recording_of_seeded_load_has_the_bytes_it_always_had(name: str, tmp_path: Path) -> None:
    make, samples, digest = RECORDINGS[name]
    path = tmp_path / "r.rec"
    write_recording(path, make(), samples)
    assert _digest(path) == digest


def _hostile_samples(n: int) -> list[Sample]:
    """Counters that go back, wrap at 2^32 and 2^64, jump past 64 bits, and devices that
    idle, so every predictor and every packing is used."""
    rng = random.Random(11)
    names = [f"d{i}" for i in range(9)]
    values = [[rng.randint(0, 2**40) for _ in range(17)] for _ in names]
    out = []
    for s in range(n):
        for d, v in enumerate(values):
            if d == 0:
                continue  # idle
            for k in range(17):
                step = rng.choice((0, 1, 3, 200, 70_000, -5, 2**32 - 1, 2**63, 2**66))
                v[k] = (v[k] + step) % 2**64 if step < 2**64 else v[k] + step
            v[8] = rng.randint(0, 40)
        counters = {
            name: DiskCounters(8, i, name, tuple(v), 17)
            for i, (name, v) in enumerate(zip(names, values, strict=True))
        }
        out.append(
            Sample(1000.0 + s * rng.uniform(0.2, 3.0), 1.7e9 + s, MappingProxyType(counters))
        )
    return out


def test_hostile_counters_have_the_bytes_they_always_had(tmp_path: Path) -> None:
    path = tmp_path / "r.rec"
    fd = path.open("xb")
    try:
        writer = ChunkWriter(fd.fileno(), {"host": "h", "inventory": []}, sync=False)
        for sample in _hostile_samples(90):
            writer.append(RecordedSample(sample))
        writer.close_chunk()
    finally:
        fd.close()
    assert _digest(path) == "a6e05b8ae934f2949341a684af11096edc68fa0999a3ca5ccdb3be0a1995f9dd"


def test_an_encoder_that_keeps_its_choices_over_a_keyframe_still_round_trips() -> None:
    """The frame store's chunks carry the predictor choices from one chunk to the next (no
    retry of every predictor at each chunk's start): each chunk still decodes on its own."""
    rng = random.Random(2)
    layout = Layout(("a", "b", "c"), (8, 8, 8), (0, 1, 2), (17, 17, 17))
    cols = [[rng.randint(0, 2**40) for _ in range(3)] for _ in range(17)]
    enc = DiskCodec(layout, carry=True)
    choices = None
    for _chunk in range(4):
        if choices is not None:
            enc = DiskCodec(layout, carry=True)
            enc.choices = choices
        dec = DiskDecoder(layout)
        dec.decode_keyframe(enc.keyframe(cols), 0)
        for _ in range(3):
            cols = [[v + rng.randint(0, 10**6) for v in col] for col in cols]
            assert dec.decode(enc.encode(cols, 1000), 0, 1000) == cols
        choices = enc.choices
        assert choices[1] == 3 * (_chunk + 1)  # counted over the chunks, not from each keyframe
