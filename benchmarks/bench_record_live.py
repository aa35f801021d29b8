"""The real recorder's CPU on this host with 60 loop devices, against iostat and atop.

Attaches ``--devices`` (60) loop devices on sparse files of its own under a temp dir in /tmp,
puts a light fio load (``--fio-iops`` each, random 4k reads and writes) on ``--fio-devices``
(3) of them, then for ``--rounds`` (3) rounds runs, at the same time:

- the console script ``iotop-plus --state-dir DIR record -i 1 --processes 20`` (and, with
  ``--baseline PATH``, that program too, e.g. a wrapper running an older commit);
- ``iostat -x 1`` and ``atop 1`` (peers; their output goes to /dev/null).

Each program's CPU is its ticks (utime + stime of /proc/PID/stat) over ``--seconds`` (60) after
``--warmup`` (10) seconds, as % of one core. Each round prints those, the load average, the
host's process count and the devices in /proc/diskstats; the end prints the medians.
Every loop device it attached is detached at the end, also on Ctrl-C or an error.

Usage (root; losetup and fio needed, iostat and atop for the peers)::

    .venv/bin/python benchmarks/bench_record_live.py [--devices 60] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from unwind import unwind_on_signals  # noqa: E402

from tests.support.loopdev import can_use_loop_devices, loop_device  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int | None:
    """utime + stime (+ waited-for children) of ``pid``, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # fields[0] is the state (field 3): utime is field 14, stime 15, cutime 16, cstime 17.
    return sum(int(x) for x in fields[11:15])


def process_count() -> int:
    """Processes on this host (numeric entries of /proc)."""
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


def device_count() -> int:
    """Lines of /proc/diskstats."""
    with open("/proc/diskstats") as fh:
        return sum(1 for _ in fh)


def start_fio(devices: list[str], iops: int) -> subprocess.Popen[bytes]:
    """One fio with a rate-limited job per device (our own loop devices)."""
    argv = ["fio", "--output=/dev/null"]
    for dev in devices:
        argv += [
            f"--name={dev}",
            f"--filename=/dev/{dev}",
            "--rw=randrw",
            "--bs=4k",
            "--size=16m",
            "--direct=1",
            "--ioengine=psync",
            "--time_based",
            "--runtime=36000",
            f"--rate_iops={iops}",
        ]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, SIGKILL after 5 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def one_round(args: argparse.Namespace, state: Path) -> dict[str, float | None]:
    """Run the recorder and the peers together; their CPU in % of a core."""

    def recorder(binary: str, state: Path) -> list[str]:
        n = str(args.processes)
        return [binary, "--state-dir", str(state), "record", "-i", "1", "--processes", n]

    cmds = {"recorder": recorder(args.iotop_plus, state)}
    if args.baseline:
        cmds["baseline"] = recorder(args.baseline, state.with_name(state.name + "-baseline"))
    cmds.update({"iostat": ["iostat", "-x", "1"], "atop": ["atop", "1"]})
    procs: dict[str, subprocess.Popen[bytes]] = {}
    with ExitStack() as stack:
        for name, argv in cmds.items():
            if shutil.which(argv[0]) is None:
                print(f"  {name}: not measured, {argv[0]} is not installed")
                continue
            procs[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE if name in ("recorder", "baseline") else subprocess.DEVNULL,
                env={**os.environ, "TERM": "xterm"},
            )
            stack.callback(stop, procs[name])
        time.sleep(args.warmup)
        first = {name: cpu_ticks(p.pid) for name, p in procs.items()}
        t0 = time.monotonic()
        time.sleep(args.seconds)
        last = {name: cpu_ticks(p.pid) for name, p in procs.items()}
        took = time.monotonic() - t0
        out: dict[str, float | None] = {}
        for name in procs:
            a, b = first[name], last[name]
            out[name] = None if a is None or b is None else (b - a) / TICK / took * 100
        for name in ("recorder", "baseline"):
            rec = procs.get(name)
            if rec is not None and rec.poll() is not None:
                err = rec.stderr.read().decode() if rec.stderr else ""
                print(f"  {name} exited with {rec.returncode}: {err.strip()}")
                out[name] = None
    return out


def main() -> int:
    """Attach the devices, run the rounds, print the figures."""
    unwind_on_signals()  # a kill or a hang-up takes down what was set up
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=60, help="loop devices to attach")
    ap.add_argument("--fio-devices", type=int, default=3)
    ap.add_argument("--fio-iops", type=int, default=100)
    ap.add_argument("--processes", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--iotop-plus", default=str(REPO / ".venv" / "bin" / "iotop-plus"))
    ap.add_argument(
        "--baseline",
        metavar="PATH",
        help="another iotop-plus (e.g. an older commit's) recording beside it in each round",
    )
    args = ap.parse_args()
    reason = can_use_loop_devices()
    if reason or shutil.which("fio") is None:
        print(f"bench_record_live: {reason or 'fio is not installed'}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="bench-record-live-", dir="/tmp"))
    results: list[dict[str, float | None]] = []
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, base, True)
        devices = [
            stack.enter_context(loop_device(base, size_mb=32, name=f"b{i}.img"))
            for i in range(args.devices)
        ]
        fio = start_fio(devices[: args.fio_devices], args.fio_iops)
        stack.callback(stop, fio)
        print(
            f"attached {len(devices)} loop devices; fio at {args.fio_iops} IOPS on "
            f"{', '.join(devices[: args.fio_devices])}; recorder -i 1 --processes {args.processes}"
        )
        for r in range(args.rounds):
            state = base / f"state-{r}"
            procs_before = process_count()
            res = one_round(args, state)
            results.append(res)
            cells = "  ".join(f"{k} {'-' if v is None else f'{v:.2f} %'}" for k, v in res.items())
            load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
            print(
                f"round {r + 1}: {cells}  | processes {procs_before}-{process_count()}, "
                f"devices {device_count()}, load {load}",
                flush=True,
            )
    names = {k for res in results for k in res}
    print("medians of % of a core:")
    for name in ("recorder", "baseline", "iostat", "atop"):
        if name in names:
            vals = [v for res in results if (v := res.get(name)) is not None]
            print(f"  {name}: {statistics.median(vals):.2f} %" if vals else f"  {name}: -")
    return 0


if __name__ == "__main__":
    sys.exit(main())
