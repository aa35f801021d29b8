"""``iotop-plus snapshot --from RECORDING``: the live snapshot's output, for recorded intervals.

The figures come from the recorded raw counters through the same rates code as live, so a
recorded pair of samples prints exactly what a live snapshot printed for it. Times are shown,
and typed times read, in the recorded host's zone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from itertools import chain
from typing import Any, TextIO

from iotop_plus.commands.common import EXIT_FAILURE, UsageError
from iotop_plus.commands.recording_input import open_recording
from iotop_plus.commands.snapshot_output import emit, resolve_devices
from iotop_plus.commands.snapshot_overview import run_overview
from iotop_plus.record.chunks import RecordedSample
from iotop_plus.sampling.disks.sampler import Platform
from iotop_plus.sampling.frame.model import FrameEvent
from iotop_plus.sampling.journal_events import recorded_events
from iotop_plus.text import parse_time, printable
from iotop_plus.why.quiet_history import QuietHistory
from iotop_plus.why.verdicts import recent_frames


def recorded_platform(header: Mapping[str, Any]) -> Platform:
    """The recorded host's platform, from header keys a recorder may store (``sysname``,
    ``machine``, ``cpus``); null where the header has no such key or a wrong type."""
    sysname, machine, cpus = (header.get(k) for k in ("sysname", "machine", "cpus"))
    return Platform(
        sysname if isinstance(sysname, str) else "Linux",
        machine if isinstance(machine, str) else None,
        cpus if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0 else None,
    )


def run_recorded(args: argparse.Namespace, out: TextIO) -> int:
    """Print the reports of a recording's window; returns the exit code."""
    opened = open_recording(args.from_path)
    if opened is None:
        return EXIT_FAILURE
    timeline, span = opened
    try:
        tz = timeline.zone
        try:
            start = parse_time(args.start, span[1], tz) if args.start else span[0]
            end = parse_time(args.end, span[1], tz) if args.end else span[1]
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if end < start:
            raise UsageError("--end is before --start")
        if args.overview:
            return run_overview(args, out, timeline, start, end)
        pairs = timeline.pairs(start, end, args.interval)
        first = next(pairs, None)
        if first is None:
            print(
                "iotop-plus: error: the recording has no whole interval in that window "
                f"({printable(args.from_path)})",
                file=sys.stderr,
            )
            return EXIT_FAILURE
        base = timeline.frame_at(first[0].sample.wall_time)
        assert base is not None
        inventory = base.inventory
        explicit = resolve_devices(args.devices, first[1].sample, inventory)

        def events(prev: RecordedSample, cur: RecordedSample) -> tuple[FrameEvent, ...]:
            # Every recorded sample after ``prev`` up to ``cur``: the interval may span several.
            got: list[FrameEvent] = []
            span = (prev.sample.wall_time, cur.sample.wall_time)
            for rs, _frame in timeline.frames(*span, inclusive_start=False):
                got += recorded_events(rs.events, rs.sample.wall_time, rs.sample.monotonic)
            return tuple(got)

        reports = (
            (prev.sample, cur.sample, frame.rates, None, frame.pressure, events(prev, cur), frame)
            for prev, cur, frame in chain((first,), pairs)
        )

        interval = args.interval or float(timeline.header.get("interval_s") or 1.0)
        platform = recorded_platform(timeline.header)
        host = timeline.host_info()
        # The first report's verdict looks back on the recorded frames up to its start, as a
        # replay's does: the last few whole, and each device's quiet awaits before them (the
        # device saturated for a while, its quiet await before that).
        earlier = [*recent_frames(base, timeline), base]
        prior = QuietHistory(timeline).every_quiet_before(earlier[0])
        return emit(
            args,
            out,
            host,
            inventory,
            explicit,
            reports,
            interval,
            tz,
            platform,
            earlier=earlier,
            prior=prior,
        )
    finally:
        timeline.close()
