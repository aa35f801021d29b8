"""``iotop-plus record``: the always-on recorder, in the foreground (systemd runs it).

Each interval stores every device's raw counters, PSI totals, the top processes (with their
cgroup, and each pid's command line once per chunk), the cgroups doing I/O with their split
per device (unless ``--no-cgroups``) and events (devices that came or went, new
settings-journal and probe-journal lines). SIGTERM and SIGINT
close the open chunk cleanly; SIGHUP is ignored (a closed SSH session must not stop it).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, UsageError, positive_float
from iotop_plus.commands.part_options import add_part_options, given_flags, wanted_keys
from iotop_plus.commands.workers import WorkerWatch
from iotop_plus.record.collect import (
    header_doc,
    inventory_doc,
    recorded_sample,
)
from iotop_plus.record.recorded_health import HealthParts
from iotop_plus.record.recorded_who import CommandLines, WhoParts
from iotop_plus.record.recorder import Recorder, RecorderError, recording_dir
from iotop_plus.record.times import parse_duration, parse_size
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import Schedule
from iotop_plus.sampling.disks.queue_settings import QueuePart
from iotop_plus.sampling.disks.sampler import read_platform
from iotop_plus.sampling.frame.model import CGROUPS, PROCESSES, Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.health.gate import HEALTH
from iotop_plus.sampling.journal_events import JournalPart
from iotop_plus.sampling.processes.issuers_part import ISSUERS
from iotop_plus.state import StateDir, chosen_state_dir
from iotop_plus.text import printable


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "record",
        help="record every interval's counters to files (for replay and bundles)",
        description="Record raw disk counters, pressure, top processes and events every "
        "interval, into daily files under <state dir>/recordings (see docs/recording-format.md). "
        "Runs in the foreground; SIGTERM closes the open chunk cleanly.",
    )
    p.add_argument(
        "--interval", "-i", type=positive_float, default=1.0, metavar="S",
        help="seconds between samples (default 1)",
    )  # fmt: skip
    p.add_argument("--dir", metavar="DIR", help="recording directory (default <state>/recordings)")
    p.add_argument(
        "--retain", default="7d", metavar="AGE",
        help="delete files older than AGE (default 7d; 0 keeps everything)",
    )  # fmt: skip
    p.add_argument(
        "--max-size", default="2G", metavar="SIZE",
        help="delete the oldest files while the directory holds more; the file being written "
        "is closed every SIZE/8 or hour, so it is never the one left (default 2G; 0: no limit)",
    )  # fmt: skip
    p.add_argument(
        "--processes", type=int, default=20, metavar="N",
        help="top N processes by I/O per sample (default 20; 0: none)",
    )  # fmt: skip
    p.add_argument(
        "--no-cgroups", dest="cgroups", action="store_false",
        help="do not record the cgroups doing I/O (each sample reads every cgroup's I/O "
        "counters: about 30 us per cgroup)",
    )  # fmt: skip
    p.add_argument(
        "--issuers", action="store_true",
        help="record who did each device's I/O (the top issuers per device; root: traces "
        "the block layer with bpftrace)",
    )  # fmt: skip
    p.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)  # tests: stop after N
    add_part_options(p, "record")
    p.set_defaults(run=run)


def _say_unrecorded_issuers(wanted: bool, first: Frame, warn: Callable[[str], None]) -> None:
    """``--issuers`` where the tracer cannot run: one line saying why."""
    lat = first.latency
    if wanted and lat is not None and lat.state == "failed":
        warn(f"issuers are not recorded: {lat.status}")


def run(args: argparse.Namespace, roots: Roots) -> int:
    """Run the recorder until SIGTERM or SIGINT; returns the exit code."""
    try:
        retain = parse_duration(args.retain)
        max_size = parse_size(args.max_size)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.interval < 0.1:
        raise UsageError("--interval must be at least 0.1 s")
    if args.processes < 0:
        raise UsageError("--processes must be 0 or more")
    stop = threading.Event()
    with WorkerWatch(stop, "iotop-plus record") as workers:
        code = _record(args, roots, retain, max_size, stop)
    return workers.exit_code(code, EXIT_FAILURE)


ISSUERS_WAIT_S = 20.0
"""With ``--issuers``, the first sample waits up to this long for the tracer to attach."""


def _record(
    args: argparse.Namespace, roots: Roots, retain: float, max_size: int, stop: threading.Event
) -> int:
    """Record until ``stop`` is set (a signal, or a worker thread that died)."""
    state_dir = chosen_state_dir(getattr(args, "state_dir", None))
    # Only what other runs write from now on (tuning, probes) is an event of this recording;
    # the frames carry it (the journal part of iotop_plus.sampling.frame.live.LiveSource).
    state = StateDir(state_dir)
    flags = given_flags(args)
    # Health: a worker reads it, H is written when it changes. A part with a record flag is
    # read only when its flag is given.
    wanted = (HEALTH, *wanted_keys(flags))
    source = live_source(roots, journal=state, want=wanted)
    if args.processes:
        source.want(PROCESSES, True)
    if args.cgroups:
        source.want(CGROUPS, True)
    who = WhoParts(CommandLines() if args.processes else None, cgroups=args.cgroups)
    source.want(ISSUERS, args.issuers)  # W: the top issuers per device, while traced
    health = HealthParts()

    def warn(line: str) -> None:
        print(f"iotop-plus record: {printable(line)}", file=sys.stderr, flush=True)

    if args.issuers:  # the first samples carry issuers (bpftrace takes seconds to attach)
        source.wait_latency(ISSUERS_WAIT_S)
    first = source.next_frame()
    _say_unrecorded_issuers(args.issuers, first, warn)
    current_inventory = inventory_doc(
        first.inventory, roots, first.nr_requests, first.get(QueuePart)
    )
    host = source.host_info()
    platform = read_platform(roots)
    try:
        directory = recording_dir(state_dir, args.dir)
        recorder = Recorder(
            directory,
            lambda: header_doc(host, args.interval, current_inventory, platform),
            retain_s=retain or None,
            max_bytes=max_size or None,
            warn=warn,
        )
    except RecorderError as exc:
        source.close()
        state.close()
        print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    said: set[str] = set()
    print(
        f"iotop-plus record: recording every {args.interval:g} s into {directory}",
        file=sys.stderr,
        flush=True,
    )
    written = 0
    try:
        frame = first
        schedule = Schedule(args.interval)
        schedule.start(frame.monotonic)
        while True:
            journal = frame.get(JournalPart)
            problems = set(journal.problems) if journal is not None else set()
            for problem in problems - said:  # once, not a line a sample
                warn(f"{problem}; its events are not recorded")
            for problem in set(frame.problems) - said:  # a part its reader could not read
                warn(f"{problem}; the part is not recorded while this lasts")
            said = problems | set(frame.problems)
            rs = recorded_sample(frame, roots, args.processes, flags)
            rs = who.add(rs, frame, recorder.files_started, recorder.writer is not None)
            rs = health.add(rs, frame, recorder.files_started, recorder.writer is not None)
            changed = None
            if frame.inventory_changed and frame.seq > 1:
                current_inventory = inventory_doc(
                    frame.inventory, roots, frame.nr_requests, frame.get(QueuePart)
                )
                changed = current_inventory
            recorder.write(rs, changed)
            written += 1
            if args.count and written >= args.count:
                break
            if not schedule.wait(stop):  # a stalled disk's late sample: no burst after it
                break
            frame = source.next_frame()
    finally:
        recorder.close()
        state.close()
        source.close()
        for s, handler in old.items():
            signal.signal(s, handler)
        signal.signal(signal.SIGHUP, old_hup)
    return EXIT_OK
