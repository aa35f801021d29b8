"""``iotop-plus`` without a subcommand: read the config, open the journal, run the app."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from iotop_plus.config import MAX_INTERVAL, MIN_INTERVAL, load_config
from iotop_plus.devices.tuner import Journal, Tuner
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import FrameSource
from iotop_plus.state import chosen_state_dir
from iotop_plus.tui.app import make_app


def run_tui(args: argparse.Namespace, roots: Roots, source: FrameSource | None = None) -> int:
    """``iotop-plus`` without a subcommand. Returns the exit code."""
    problems: list[str] = []
    config = load_config(problems=problems)
    for line in problems:
        print(f"iotop-plus: {line}", file=sys.stderr)
    interval = getattr(args, "interval", None)
    if interval is not None and not MIN_INTERVAL <= interval <= MAX_INTERVAL:
        print(
            f"iotop-plus: error: --interval {interval:g}: must be {MIN_INTERVAL:g} to "
            f"{MAX_INTERVAL:g} seconds",
            file=sys.stderr,
        )
        return 2
    if getattr(args, "tui_all", False):
        config = dataclasses.replace(config, show_all=True)
    if getattr(args, "read_only", False):
        config = dataclasses.replace(config, read_only=True)
    is_root = os.geteuid() == 0
    journal = Journal.in_dir(chosen_state_dir(getattr(args, "state_dir", None)))
    tuner = Tuner(roots, journal, is_root=is_root)
    app = make_app(
        roots,
        config,
        source=source,
        interval=interval,
        tuner=tuner,
        revert_on_exit=bool(getattr(args, "revert_on_exit", False)),
        notes=problems,
        devices=getattr(args, "tui_devices", ()) or (),
    )
    try:
        result = app.run()
    finally:
        journal.close()
    return int(result or 0) if app.return_code in (None, 0) else int(app.return_code or 1)
