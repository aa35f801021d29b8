"""``probe durability`` beside ``pg_test_fsync -s 2`` on the same directory.

Rounds alternate (ours, then pg_test_fsync) to share the host's drift; per method and writes
per op the script prints the median ops/s of both over the rounds, their ranges, and the
ratio of the medians (ours / pg_test_fsync).

    .venv/bin/python benchmarks/bench_durability.py --target DIR [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PG_TEST_FSYNC = "/usr/lib/postgresql/15/bin/pg_test_fsync"
METHODS = ("open_datasync", "fdatasync", "fsync", "open_sync")
_LINE = re.compile(r"^\s+(?P<name>\w+)\s+(?P<ops>[\d.]+) ops/sec")


def ours(target: Path, state: Path) -> dict[tuple[str, int], float]:
    command = ["--state-dir", str(state), "probe", "durability", "-r", "2", "-q", "-f", "json"]
    out = subprocess.run(
        [sys.executable, "-m", "iotop_plus", *command, "--target", str(target)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    doc = json.loads(out)
    return {
        (m["name"], m["writes_per_op"]): m["ops_per_s"]
        for m in doc["methods"]
        if m["ops_per_s"] is not None
    }


def pg(target: Path) -> dict[tuple[str, int], float]:
    out = subprocess.run(
        [PG_TEST_FSYNC, "-s", "2", "-f", str(target / "pg_test_fsync.out")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[tuple[str, int], float] = {}
    writes = 0
    for line in out.splitlines():
        if "using one 8kB write" in line:
            writes = 1
        elif "using two 8kB writes" in line:
            writes = 2
        elif "Compare open_sync" in line or "Test if fsync" in line:
            writes = 0
        m = _LINE.match(line)
        if m and writes and m["name"] in METHODS:
            found[(m["name"], writes)] = float(m["ops"])
    return found


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):>9,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, required=True, help="an existing directory")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as state:
        a: dict[tuple[str, int], list[float]] = {}
        b: dict[tuple[str, int], list[float]] = {}
        for round_no in range(1, args.rounds + 1):
            for key, value in ours(args.target, Path(state)).items():
                a.setdefault(key, []).append(value)
            for key, value in pg(args.target).items():
                b.setdefault(key, []).append(value)
            print(f"round {round_no} done", file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds on {args.target}: ops/s median (range)")
    print(f"{'method':<18}{'probe durability':>28}{'pg_test_fsync -s 2':>28}  ratio")
    for writes in (1, 2):
        for name in METHODS:
            key = (name, writes)
            ra, rb = a.get(key, []), b.get(key, [])
            ratio = f"{statistics.median(ra) / statistics.median(rb):.2f}" if ra and rb else "n/a"
            print(f"{name + ' x' + str(writes):<18}{spread(ra):>28}{spread(rb):>28}  {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
