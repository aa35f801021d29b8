"""``iotop-plus`` without a subcommand: read the config, open the journal, run the app."""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from iotop_plus.config import load_config
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import FrameSource
from iotop_plus.sampling.frame.sources import tui_source
from iotop_plus.sampling.store.joined import OpenOlder
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.state import chosen_state_dir
from iotop_plus.tui import engine
from iotop_plus.tui.app import make_app

if TYPE_CHECKING:
    from iotop_plus.devices.journal import Journal
    from iotop_plus.devices.tuner import Tuner


def run_tui(args: argparse.Namespace, roots: Roots, source: FrameSource | None = None) -> int:
    """``iotop-plus`` without a subcommand. Returns the exit code."""
    problems: list[str] = []
    config = load_config(problems=problems)
    for line in problems:
        print(f"iotop-plus: {line}", file=sys.stderr)
    interval = getattr(args, "interval", None)  # range checked by the parser (cli.py)
    if getattr(args, "tui_all", False):
        config = dataclasses.replace(config, show_all=True)
    if getattr(args, "read_only", False):
        config = dataclasses.replace(config, read_only=True)
    is_root = os.geteuid() == 0
    state_dir = chosen_state_dir(getattr(args, "state_dir", None))
    journals: list[Journal] = []

    def tuner() -> Tuner:
        # Made when first needed (the restore offer after the first paint, a key, the quit):
        # the journal's and the settings' modules are not on the way to the first figures.
        from iotop_plus.devices.journal import Journal
        from iotop_plus.devices.tuner import Tuner

        journals.append(Journal.in_dir(state_dir))
        return Tuner(roots, journals[-1], is_root=is_root)

    if source is None:  # the caller's source is read as it was built (cli.py builds the TUI's)
        source = tui_source(roots, state_dir)
    app = make_app(
        roots,
        config,
        source=source,
        interval=interval,
        tuner=tuner,
        revert_on_exit=bool(getattr(args, "revert_on_exit", False)),
        notes=problems,
        devices=getattr(args, "tui_devices", ()) or (),
        older_history=_recordings(state_dir) if roots.is_live else None,
    )
    app.main_screen.later.freeze_gc = True  # (tests leave it off: see LaterParts)
    engine.announce()  # (before the alternate screen: it stays readable)
    try:
        result = app.run()
    finally:
        for journal in journals:
            journal.close()
        app.say_farewell()  # outside the alternate screen, which is gone now
    return int(result or 0) if app.return_code in (None, 0) else int(app.return_code or 1)


def _recordings(state_dir: Path) -> OpenOlder:
    """Opens this host's recordings (``<state dir>/recordings``) for the TUI's history, the
    first time a scrub goes past what the TUI itself kept; None when there are none. A file
    that cannot be read is skipped with one line to ``warn``."""

    def open_older(warn: Callable[[str], object]) -> Timeline | None:
        from iotop_plus.record.format import FormatError
        from iotop_plus.record.recorder import RecorderError, recording_dir
        from iotop_plus.record.timeline import open_timeline

        try:
            directory = recording_dir(state_dir, None)
            if not directory.is_dir():
                return None
            timeline = open_timeline(directory, follow=True, warn=warn)
        except (RecorderError, FormatError, OSError):
            return None  # no recordings (or none readable): the ring alone
        if timeline.host_info().hostname != socket.gethostname():
            timeline.close()  # a copied directory of another host: not this host's history
            return None
        return timeline

    return open_older
