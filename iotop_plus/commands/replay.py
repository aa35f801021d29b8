"""``iotop-plus replay [PATH|DIR] [--at TIME] [--interval S]``: the TUI on a recording.

The same screen as live (table, charts, processes, device facts as recorded, event marks) on
recorded frames. Tuning and probes are refused in a replay. The TUI itself is loaded by
``cli.py`` (``args.replay_tui``): commands never import Textual.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from iotop_plus.commands.common import EXIT_FAILURE, UsageError, positive_float
from iotop_plus.commands.recording_input import warn
from iotop_plus.record.format import FormatError
from iotop_plus.record.recorder import RecorderError, recording_dir
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.state import chosen_state_dir
from iotop_plus.text import parse_time, printable


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "replay",
        help="the TUI on a recording, a bundle or the recording directory",
        description="Open the TUI on recorded frames: [ ] step a sample, { } a minute, g "
        "jumps to a time, l goes to the end. Tuning and probes are disabled in a replay.",
    )
    p.add_argument(
        "path",
        nargs="?",
        metavar="PATH|DIR",
        help="a recording file, a bundle, or a directory of them (default: this host's "
        "recording directory, <state dir>/recordings)",
    )
    p.add_argument(
        "--at", metavar="TIME", help="start at TIME: 14:05, '10m ago' or ISO 8601 (default: start)"
    )
    p.add_argument(
        "--interval",
        "-i",
        dest="replay_interval",
        type=positive_float,
        metavar="S",
        help="aggregate to S-second figures, computed from the raw counters",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, roots: Roots) -> int:
    """Open the recording and run the TUI on it; returns the exit code."""
    try:
        path = args.path or recording_dir(chosen_state_dir(getattr(args, "state_dir", None)), None)
        timeline = open_timeline(path, interval=args.replay_interval, warn=warn)
    except (RecorderError, FormatError) as exc:
        print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:
        name = printable(str(exc.filename or args.path or "recordings"))
        print(f"iotop-plus: error: {name}: {exc.strerror}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        span = timeline.span()
        if span is None:
            print(f"iotop-plus: error: {printable(str(path))}: no samples", file=sys.stderr)
            return EXIT_FAILURE
        at = None
        if args.at:
            try:
                at = parse_time(args.at, span[1], timeline.zone)
            except ValueError as exc:
                raise UsageError(f"--at: {exc}") from None
        return int(args.replay_tui(args, roots, timeline, at))
    finally:
        timeline.close()
