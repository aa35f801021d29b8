"""``iotop-plus bundle --last 15m -o FILE``: the recent recording window as one file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, UsageError
from iotop_plus.commands.recording_input import warn
from iotop_plus.record.bundle import BundleError, write_bundle
from iotop_plus.record.format import FormatError
from iotop_plus.record.recorder import RecorderError, recording_dir
from iotop_plus.record.timeline import open_timeline
from iotop_plus.record.times import parse_duration
from iotop_plus.roots import Roots
from iotop_plus.state import CHANGES, PROBES, StateDir, StateError, chosen_state_dir
from iotop_plus.text import printable


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "bundle",
        help="write the last minutes of the recording to one file, for an incident ticket",
        description="Write one self-contained file with the recorded window, the device "
        "inventory and the settings and probe journals. `replay FILE` and "
        "`snapshot --from FILE` read it. It holds every user's process names: mode 0600.",
    )
    p.add_argument("--last", default="15m", metavar="AGE", help="window length (default 15m)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the bundle to write")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    p.add_argument("--dir", metavar="DIR", help="recording directory (default <state>/recordings)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, _roots: Roots) -> int:
    """Write the bundle; returns the exit code."""
    try:
        last = parse_duration(args.last)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    state_dir = chosen_state_dir(getattr(args, "state_dir", None))

    try:
        directory = recording_dir(state_dir, args.dir)
        timeline = open_timeline(directory, warn=warn)
    except (RecorderError, FormatError) as exc:
        print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:
        print(f"iotop-plus: error: cannot read recordings: {exc.strerror}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        span = timeline.span()
        if span is None:
            print(f"iotop-plus: error: no samples in {printable(str(directory))}", file=sys.stderr)
            return EXIT_FAILURE
        journals: dict[str, list[dict[str, Any]]] = {}
        state = StateDir(state_dir)
        for key, name in (("journal", CHANGES), ("probes", PROBES)):
            try:
                journals[key] = list(state.records(name))
            except StateError as exc:
                warn(f"{exc}; the bundle leaves it out")
        state.close()
        try:
            n = write_bundle(
                timeline, span[1] - last, span[1], Path(args.output), force=args.force,
                journals=journals, warn=warn,
            )  # fmt: skip
        except BundleError as exc:
            print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
            return EXIT_FAILURE
    finally:
        timeline.close()
    print(f"iotop-plus: wrote {n} samples to {printable(args.output)}", file=sys.stderr)
    return EXIT_OK
