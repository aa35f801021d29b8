"""``iotop-plus snapshot``: iostat -x figures, headless, as a table, JSON or CSV.

Unlike iostat, there is no "since boot" first report: every report covers a measured
interval, and the first sample only sets the baseline.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from iotop_plus.commands.common import UsageError, add_interval_count
from iotop_plus.commands.named_devices import resolve_devices
from iotop_plus.commands.part_options import add_part_options, given_flags, wanted_keys
from iotop_plus.commands.snapshot_cpu import CpuTimes, read_cpu
from iotop_plus.commands.snapshot_output import Report, emit, printed_notes
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import frames_on_schedule
from iotop_plus.sampling.disks.sampler import read_platform
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY_QUEUE, Frame
from iotop_plus.sampling.health.gate import HEALTH
from iotop_plus.text import printable


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "snapshot",
        help="print iostat -x figures for an interval and exit",
        description="Print iostat -x figures over measured intervals. The first sample is "
        "only a baseline: --count N reports N intervals.",
    )
    p.add_argument(
        "devices",
        nargs="*",
        metavar="DEV",
        help="devices to report (kernel name, dm name or /dev path); default: whole "
        "devices that have done I/O since boot, without loop/ram/zram (as the TUI)",
    )
    add_interval_count(p)
    p.add_argument("--format", "-f", choices=("table", "json", "csv"), default="table")
    p.add_argument(
        "--all",
        "-a",
        action="store_true",
        dest="show_all",
        help="every device, including never-used ones and partitions",
    )
    p.add_argument("--partitions", "-p", action="store_true", help="add partitions of used devices")
    p.add_argument(
        "--latency",
        action="store_true",
        help="add per-device latency percentiles and the queue/device split (root; traces "
        "the block layer with bpftrace)",
    )
    p.add_argument(
        "--health",
        action="store_true",
        help="add each device's health (smartctl, else sysfs, else why none) and the I/O "
        "errors since the start as disk[].health in JSON",
    )
    p.add_argument(
        "--issuers",
        action="store_true",
        help="add who did each device's I/O as disk[].issuers in JSON: up to 10 processes by "
        "IOPS with command line, cgroup and latency (root; traces the block layer)",
    )
    p.add_argument(
        "--diagnose",
        action="store_true",
        help="read cgroups and their limits too, so disk[].diagnosis (always in JSON) can "
        "check throttling; --issuers implies it",
    )
    p.add_argument(
        "--from",
        dest="from_path",
        metavar="PATH",
        help="report from a recording (file, bundle or directory) instead of the live host: "
        "every recorded interval, or --interval S aggregated from the raw counters",
    )
    p.add_argument("--start", metavar="T", help="with --from: 14:05, '10m ago' or ISO 8601")
    p.add_argument("--end", metavar="T", help="with --from: end of the window (default: its end)")
    p.add_argument(
        "--overview",
        action="store_true",
        help="with --from: the per-minute roll-ups stored in the recording (mean and max of "
        "IOPS, MB/s, await, %%util, aqu-sz per device) without decoding the samples: a day in "
        "about a second",
    )
    # None tells "not given" (--from then reports every recorded interval); live uses 1 and 1.
    add_part_options(p, "report")
    p.set_defaults(run=run, interval=None, count=None)


#: How long ``--latency`` waits for the tracer's probes before the baseline sample.
LATENCY_START_TIMEOUT_S = 10.0


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    if args.from_path:
        from iotop_plus.commands.snapshot_recorded import run_recorded

        return run_recorded(args, out)
    if args.start or args.end or args.overview:
        raise UsageError("--start, --end and --overview need --from RECORDING")
    args.interval = args.interval or 1.0
    args.count = args.count or 1
    from iotop_plus.sampling.frame.sources import live_source
    from iotop_plus.state import StateDir, chosen_state_dir

    # Setting changes and probe results of other runs during the snapshot: the frames' events.
    state = StateDir(chosen_state_dir(getattr(args, "state_dir", None)))
    source = live_source(roots, journal=state)
    try:
        return _run(args, source, out)
    finally:
        source.close()  # kills the latency tracer
        state.close()


def _run(args: argparse.Namespace, source: LiveSource, out: TextIO) -> int:
    latency = bool(getattr(args, "latency", False))
    printed_notes.clear()
    if latency:
        source.want(LATENCY_QUEUE, True)
        # The baseline is read once the probes are attached: every interval is traced whole.
        source.wait_latency(LATENCY_START_TIMEOUT_S)
    if getattr(args, "health", False):
        from iotop_plus.commands.snapshot_health import wait_for_health

        source.want(HEALTH, True)
        wait_for_health(source)  # the first reading of every device, before the baseline
        if args.format != "json":
            print("iotop-plus: note: --health adds disk[].health to JSON only", file=sys.stderr)
    if getattr(args, "diagnose", False) or getattr(args, "issuers", False):
        from iotop_plus.commands.snapshot_diagnosis import want_diagnosis

        want_diagnosis(source)
    if getattr(args, "issuers", False):
        from iotop_plus.commands.snapshot_issuers import want_issuers

        want_issuers(source, LATENCY_START_TIMEOUT_S, args.format)
    parts = wanted_keys(given_flags(args))
    for key in parts:
        source.want(key, True)
    if parts:  # a part that traces has its probes attached before the baseline, as latency
        source.wait_latency(LATENCY_START_TIMEOUT_S)
    first_frame = source.next_frame()
    first = first_frame.sample
    inventory = first_frame.inventory
    explicit = resolve_devices(args.devices, first, inventory)
    host = source.host_info()
    if first.notice:
        print(f"iotop-plus: note: {printable(first.notice)}", file=sys.stderr)
    if getattr(args, "issuers", False) and not latency and first_frame.latency is not None:
        printed_notes.add(first_frame.latency.status or "")  # --issuers says why in its own line
    _warn(first_frame)

    cpu: dict[float, CpuTimes | None] | None = None
    if args.format == "json":  # iostat's avg-cpu, read as each frame is
        cpu = {first.monotonic: read_cpu(source.roots)}
    reports = _intervals(source, first_frame, args.interval, args.count, cpu)
    platform = read_platform(source.roots) if args.format == "json" else None
    return emit(
        args, out, host, inventory, explicit, reports, args.interval, platform=platform, cpu=cpu
    )


def _warn(frame: Frame) -> None:
    for problem in frame.sample.problems:
        print(f"iotop-plus: warning: skipped {problem}", file=sys.stderr)
    lat = frame.latency
    if lat is not None:
        if lat.notice:
            print(f"iotop-plus: note: {printable(lat.notice)}", file=sys.stderr)
        if lat.status and lat.state == "failed" and lat.status not in printed_notes:
            printed_notes.add(lat.status)
            print(f"iotop-plus: latency: {printable(lat.status)}", file=sys.stderr)


def _intervals(
    source: LiveSource,
    first: Frame,
    interval: float,
    count: int,
    cpu: dict[float, CpuTimes | None] | None = None,
) -> Iterator[Report]:
    def seen(frame: Frame) -> None:
        if cpu is not None:
            cpu[frame.sample.monotonic] = read_cpu(source.roots)
            while len(cpu) > 2:  # the interval being written needs its two ends only
                del cpu[next(iter(cpu))]
        _warn(frame)

    for prev, cur in frames_on_schedule(source, interval, count, first=first, on_frame=seen):
        yield prev.sample, cur.sample, cur.rates, cur.latency, cur.pressure, cur.events, cur
