"""The seeded synthetic load of ``benchmarks/bench_record.py``: busy devices whose counters
all move every sample, for recordings written with the real writer (benchmarks and tests)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.disks.sampler import Sample

T0 = 1_700_000_000.0
"""Wall time of the first sample."""


class Load:
    """Seeded busy devices: IOPS 100-20,000 drifting +-20 % per sample, every counter moving
    (but on the ``idle`` last ones)."""

    def __init__(
        self, n: int, seed: int = 13, noisy: bool = False, steady: bool = False, idle: int = 0
    ) -> None:
        self.noisy = noisy
        """Also give in_flight, io_ticks and the discard counters independent random noise
        (a stress case: ~50 bits per device per sample that no predictor can remove)."""
        self.steady = steady
        """Drift +-20 % around each device's own rate every sample (a steady load with
        noise) instead of from the previous sample's (a random walk)."""
        self.idle = idle
        """The last ``idle`` devices do no I/O at all."""
        self.rng = random.Random(seed)
        r = self.rng
        self.names = [f"sd{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(n)]
        self.iops = [r.uniform(100, 20000) for _ in range(n)]
        self.read_frac = [r.uniform(0.2, 0.8) for _ in range(n)]
        self.sizes = [
            (r.choice((8, 16, 32, 64, 256)), r.choice((8, 16, 64, 128))) for _ in range(n)
        ]
        self.lat = [(r.uniform(0.1, 5), r.uniform(0.2, 8)) for _ in range(n)]
        self.values = [[r.randint(10**6, 10**9) for _ in range(17)] for _ in range(n)]
        self.base = list(self.iops)

    def step(self) -> list[list[int]]:
        r = self.rng
        for d, v in enumerate(self.values):
            if d >= len(self.values) - self.idle:
                continue
            last = self.base[d] if self.steady else self.iops[d]
            self.iops[d] = min(20000.0, max(100.0, last * r.uniform(0.8, 1.2)))
            ios = self.iops[d]
            reads = max(1, int(ios * self.read_frac[d]))
            writes = max(1, int(ios) - reads)
            rs, ws = self.sizes[d]
            rl, wl = self.lat[d]
            v[0] += reads
            v[1] += max(1, reads // 9)
            v[2] += reads * rs
            v[3] += max(1, int(reads * rl))
            v[4] += writes
            v[5] += max(1, writes // 5)
            v[6] += writes * ws
            v[7] += max(1, int(writes * wl))
            busy_ms = reads * rl + writes * wl
            v[10] += max(1, int(busy_ms))
            v[15] += max(1, writes // 50)
            v[16] += max(1, writes // 100)
            if self.noisy:
                v[8] = r.randint(0, 32)
                v[9] += r.randint(500, 1000)
                v[11] += r.randint(1, 20)
                v[12] += r.randint(1, 3)
                v[13] += r.randint(100, 4000)
                v[14] += r.randint(1, 10)
            else:  # all driven by the drifting IOPS: Little's law, utilisation, TRIM share
                v[8] = int(busy_ms / 1000)
                v[9] += min(1000, max(1, int(busy_ms / max(1.0, busy_ms / 1000 + 1))))
                discards = max(1, writes // 40)
                v[11] += discards
                v[12] += max(1, discards // 4)
                v[13] += discards * 256
                v[14] += max(1, discards // 2)
        return self.values

    def text(self) -> str:
        return "".join(
            f"   8 {i:7d} {n} " + " ".join(map(str, v)) + "\n"
            for i, (n, v) in enumerate(zip(self.names, self.values, strict=True))
        )

    def sample(self, k: int) -> Sample:
        counters = {
            n: DiskCounters(8, i, n, tuple(v), 17)
            for i, (n, v) in enumerate(zip(self.names, self.values, strict=True))
        }
        return Sample(50_000.0 + k * 1.0003, T0 + k, MappingProxyType(counters))


def write_recording(
    path: str | os.PathLike[str],
    load: Load,
    n: int,
    parts: Callable[[int], Mapping[str, Any]] | None = None,
) -> None:
    """A recording of ``n`` samples of ``load`` at 1 Hz, written by the recorder's writer;
    ``parts(k)`` gives sample ``k``'s frame parts by record letter."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        writer = ChunkWriter(fd, {"host": "synthetic", "inventory": []})
        for k in range(n):
            load.step()
            got = MappingProxyType(dict(parts(k))) if parts is not None else MappingProxyType({})
            writer.append(RecordedSample(load.sample(k), parts=got))
        writer.close_chunk()
    finally:
        os.close(fd)
