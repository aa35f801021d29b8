"""The recordings of format versions 1 to 3 under ``tests/fixtures/recordings/``, and the samples
they were written from.

The files were written once by the writers of those versions (see the README beside them);
iotop-plus writes only the current version. :func:`fixture_samples` gives the samples
the files hold, so a test reads a file and compares what it decodes to with them. Changing
anything here makes the files disagree with it: these are what the files were made from.

Three devices, 32 samples 5 s apart, starting 40 s before a minute boundary (so three chunks
of 8, 12 and 12 samples):

- ``sda`` busy, its counters correlated as a real disk's (sizes and latencies per request);
- ``sdb`` saturating: its io ticks follow its queue as a single server's do;
- ``sdc`` as a 4.14 kernel prints it (11 counters, no discards or flushes), with a read-ms
  counter that wraps at 2^32, sectors written near 2^64, and every counter reset to small
  values at sample 20 (a device removed and added back under the same name).

Each sample has process ``fio`` (pid 42), the host's pressure, and some samples events
(a device event, a settings journal line, a probe journal line).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.sampling.disks.diskstats import IN_FLIGHT, IO_TICKS, DiskCounters
from iotop_plus.sampling.disks.sampler import Sample

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "recordings"
"""Where the old-version recordings are: ``v1.rec``, ``v2.rec``, ``v3.rec``."""
VERSIONS = (1, 2, 3)
"""The format versions a recording fixture exists for."""
T0 = 1_700_000_000.0
"""The wall time of the first sample (20 s into a UTC minute)."""
STEP = 5.0
"""Seconds between samples (wall time; the monotonic clock runs a little slow)."""
N_SAMPLES = 32
MONOTONIC0 = 500.25
HEADER: dict[str, Any] = {
    "format": "iotop-plus recording",
    "tool_version": "0.9.0",
    "host": "oldhost",
    "kernel": "6.1.0-old",
    "zone": "UTC",
    "utc_offset_s": 0,
    "started_ns": int(T0 * 1e9),
    "interval_s": STEP,
    "pid": 4242,
    "inventory": [
        {"name": "sda", "major": 8, "minor": 0, "kind": "disk"},
        {"name": "sdb", "major": 8, "minor": 16, "kind": "disk"},
        {"name": "sdc", "major": 8, "minor": 32, "kind": "disk"},
    ],
    "queue": {"sda": {"scheduler": "mq-deadline", "read_ahead_kb": 128, "nr_requests": 64}},
}
"""The header the files were written with (``version`` added per file)."""
FIO = 42
"""The pid of the one recorded process, ``fio``."""
CHANGE = {
    "record": "change",
    "device": "sda",
    "setting": "read_ahead_kb",
    "old": "128",
    "new": "256",
}
PROBE = {"record": "probe", "device": "sdb", "preset": "randread-4k", "iops": 1234.5}


def path_of(version: int) -> Path:
    """The fixture recording of format ``version``."""
    return FIXTURES / f"v{version}.rec"


def copy_as_directory(version: int, directory: Path) -> Path:
    """A recordings directory holding the fixture of ``version`` under the name a recorder of
    that version gave its files (no sequence number); returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path_of(version), directory / "iotop-plus-20231114-221320.rec")
    return directory


def _busy(rng: random.Random, v: list[int], iops: float, *, saturating: bool) -> None:
    reads = int(iops * STEP * 0.6)
    writes = int(iops * STEP) - reads
    queue_ms = int(reads * 0.7 + writes * 1.9)
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
            int(STEP * 900),
            queue_ms,
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
        ms = int(STEP * 1000)
        v[IO_TICKS] += ms * queue_ms // (queue_ms + ms) - int(STEP * 900)
    v[IN_FLIGHT] = queue_ms // int(STEP * 1000) + rng.randint(0, 2)


def _old_kernel(s: int, v: list[int]) -> None:
    """``sdc``: 11 counters, a wrapping read ms, sectors written near 2^64, a reset at 20."""
    if s == 20:
        v[:] = [3, 0, 24, 1, 2, 0, 16, 1, 0, 4, 2] + [0] * 6
        return
    v[0] += 40 + s
    v[1] += s % 3
    v[2] += (40 + s) * 8
    v[3] = (v[3] + 300 + 7 * s) % (1 << 32)
    v[4] += 10 + s
    v[6] += (10 + s) * 8 + (1 << 40)
    v[7] += 25 + s
    v[8] = s % 4
    v[9] += 600
    v[10] += 320 + 9 * s


def fixture_samples() -> list[RecordedSample]:
    """The samples every fixture recording holds, in order."""
    rng = random.Random(11)
    sda = [rng.randint(10**6, 10**9) for _ in range(17)]
    sdb = [rng.randint(10**6, 10**9) for _ in range(17)]
    sdc = [5_000, 17, 40_000, (1 << 32) - 2_000, 900, 3, (1 << 64) - (1 << 46), 5_000, 0, 7, 9]
    sdc += [0] * 6
    iops = [rng.uniform(100, 20000), rng.uniform(8000, 20000)]
    out = []
    for s in range(N_SAMPLES):
        iops = [min(20000.0, max(100.0, x * rng.uniform(0.8, 1.2))) for x in iops]
        _busy(rng, sda, iops[0], saturating=False)
        _busy(rng, sdb, iops[1], saturating=True)
        _old_kernel(s, sdc)
        counters = {
            "sda": DiskCounters(8, 0, "sda", tuple(sda), 17),
            "sdb": DiskCounters(8, 16, "sdb", tuple(sdb), 17),
            "sdc": DiskCounters(8, 32, "sdc", tuple(sdc), 11),
        }
        sample = Sample(MONOTONIC0 + s * STEP * 0.9999, T0 + s * STEP, MappingProxyType(counters))
        read = 4096 * 100 * s
        process = {
            "pid": FIO,
            "comm": "fio",
            "cgroup": "/system.slice/fio.service",
            "read_bytes": read,
            "write_bytes": 4096 * 10 * s,
            "delay_ticks": 3 * s,
            "read_bps": 4096 * 100 / STEP if s else None,
            "write_bps": 4096 * 10 / STEP if s else None,
        }
        some = {"avg10": 1.5 + s / 10, "avg60": 1.25, "avg300": 0.5, "total_us": 10**6 + s * 997}
        pressure = {
            "io": {"some": some, "full": {**some, "avg10": 0.75}},
            "memory": {"some": {**some, "avg10": 0.0}, "full": None},
        }
        events: tuple[dict[str, Any], ...] = ()
        if s == 3:
            events = (
                {
                    "source": "device",
                    "kind": "device-added",
                    "text": "sdc appeared",
                    "device": "sdc",
                },
            )
        elif s == 13:
            events = ({"source": "changes", "record": CHANGE},)
        elif s == 25:
            events = ({"source": "probes", "record": PROBE},)
        out.append(RecordedSample(sample, (process,), pressure, events))
    return out
