"""Recording size and speed on a seeded synthetic 200-device host at 1 Hz.

Every counter of every device changes every sample; each device runs 100-20,000 IOPS that
drift by up to +-20 % per sample (seeded). Reports bytes per device per sample of the disk
records, the projected 24 h size, the recorder's CPU per sample (encode and write; and with
parsing /proc/diskstats text too), and the open and seek times on a generated 24 h file.
``--atop S`` also runs ``atop -w`` for S seconds on this host and reports its bytes/sample.
The real recorder's CPU on this host with 60 loop devices: ``bench_record_live.py``.

    .venv/bin/python benchmarks/bench_record.py [--devices 200] [--samples 600] [--atop 90]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iotop_plus.commands.snapshot_overview import minutes
from iotop_plus.record.chunks import ChunkWriter, RecordedSample
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.timeline import open_timeline
from iotop_plus.sampling.disks.diskstats import DiskCounters, parse_diskstats
from iotop_plus.sampling.disks.sampler import Sample
from tests.support.recorded_load import T0, Load


def write_file(path: Path, load: Load, n: int, *, parse: bool = False) -> tuple[float, ChunkWriter]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    writer = ChunkWriter(fd, {"host": "bench", "inventory": []})
    cpu = 0.0
    cache: dict[str, DiskCounters] = {}
    for k in range(n):
        load.step()
        text = load.text() if parse else ""
        t = time.thread_time()
        if parse:
            counters = parse_diskstats(text, "/proc/diskstats", [], cache)
            sample = Sample(50_000.0 + k * 1.0003, T0 + k, MappingProxyType(counters))
        else:
            sample = load.sample(k)
        writer.append(RecordedSample(sample))
        cpu += time.thread_time() - t
    writer.close_chunk()
    os.close(fd)
    return cpu / n, writer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=200)
    ap.add_argument("--samples", type=int, default=600)
    ap.add_argument("--day", type=int, default=86400, help="samples in the seek-test file")
    ap.add_argument("--atop", type=float, default=0, help="seconds of atop -w to compare")
    ap.add_argument("--noisy", action="store_true", help="independent noise on 6 counters")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-record-"))
    try:
        load = Load(args.devices, noisy=args.noisy)
        per, writer = write_file(tmp / "size.rec", load, args.samples)
        st = writer.stats
        n, d = st.samples, args.devices
        kind = "noisy" if args.noisy else "IOPS-driven"
        print(f"devices {d}, samples {n} at 1 Hz (seeded synthetic load, {kind})")
        print(f"disk records: {st.disks / n / d:.2f} B/device/sample")
        print(f"trailers (index + roll-ups): {st.trailers / n / d:.2f} B/device/sample")
        print(f"headers: {st.headers} B per file")
        total = st.total / n / d
        print(f"all: {total:.2f} B/device/sample -> 24 h {total * d * 86400 / 1e6:.1f} MB")
        print(f"raw diskstats text: {len(load.text()) / d:.1f} B/device/sample")
        print(f"recorder CPU, encode + write: {per * 1000:.2f} ms/sample = {per * 100:.2f} % core")
        per_parse, _ = write_file(
            tmp / "parse.rec",
            Load(args.devices, noisy=args.noisy),
            min(args.samples, 300),
            parse=True,
        )
        print(
            f"  with parsing diskstats: {per_parse * 1000:.2f} ms/sample = {per_parse * 100:.2f} %"
        )
        print(f"writing a {args.day} s file for open/seek ...", flush=True)
        day = tmp / "day.rec"
        write_file(day, Load(args.devices, seed=5, noisy=args.noisy), args.day)
        print(f"  file size {day.stat().st_size / 1e6:.1f} MB")
        t = time.perf_counter()
        timeline = open_timeline(day)
        opened = time.perf_counter() - t
        print(f"open: {opened * 1000:.1f} ms ({len(RecordingFile(day).chunks)} chunks)")
        rng = random.Random(1)
        seeks = []
        for _ in range(20):
            minute = rng.randrange(args.day // 60)
            t = time.perf_counter()
            frame = timeline.frame_at(T0 + minute * 60 + 0.5)
            seeks.append(time.perf_counter() - t)
            assert frame is not None
        seeks.sort()
        print(f"seek to a minute: median {seeks[10] * 1000:.1f} ms, max {seeks[-1] * 1000:.1f} ms")
        t = time.perf_counter()
        rows = sum(1 for _ in minutes(timeline.files, T0, T0 + args.day))
        took = time.perf_counter() - t
        print(
            f"overview (roll-ups only, no sample decoded): {rows} minutes in {took * 1000:.0f} ms"
        )
        if args.atop:
            atop(tmp, args.atop)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def atop(tmp: Path, seconds: float) -> None:
    if shutil.which("atop") is None:
        print("atop -w: not compared, atop is not installed (apt-get install atop)")
        return
    path = tmp / "atop.raw"
    n = max(2, int(seconds))
    t = time.monotonic()
    subprocess.run(["atop", "-w", str(path), "1", str(n)], check=False, capture_output=True)
    took = time.monotonic() - t
    size = path.stat().st_size
    print(
        f"atop -w, 1 s interval, {n} samples over {took:.0f} s: {size:,} B, {size / n:.0f} B/sample"
    )


if __name__ == "__main__":
    main()
