"""``iotop-plus restore [--keep|--force] [--dry-run]``: put back (or keep) what a dead run left.

A leftover is a change in the journal that was neither undone nor kept, whose run no longer
holds its lock (kill -9, a crash, a power cut mid-A/B, a hangup: an SSH link that dropped).
One line per leftover: ``DEVICE SETTING: current -> original, restored|kept|stale|skipped
(...)`` (``host`` for a host setting such as ``kernel.task_delayacct``). ``--keep`` writes
nothing: it closes each leftover as kept (journal reason ``kept``), so the values stay and
nothing refuses or offers them any more. A leftover whose device name now belongs to another
device (another ``diskseq``), or a host setting from another boot, is stale: reported, closed,
never written. A setting changed since that run left it (by another run, by hand) is not
put back: one line names its value now, what the run set, the original and who changed it
(when the journal knows), and the journal records the refusal; ``--force`` puts the
original back all the same (journaled as ``put_back``). Exit 0 when everything was restored,
kept or stale, 1 when anything was skipped, refused or failed, 2 for a usage error (a
captured tree, or ``--keep`` with ``--force``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, UsageError
from iotop_plus.devices.changes import HOST_SCOPE
from iotop_plus.devices.conflicts import FORCE, REFUSE, ConflictError, TuningError
from iotop_plus.devices.journal import Journal, JournalError
from iotop_plus.devices.leftovers import Leftover
from iotop_plus.devices.settings import read_setting
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import not_live_reason
from iotop_plus.roots import Roots
from iotop_plus.state import chosen_state_dir


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "restore",
        help="put back queue settings that a run which died left changed (from the journal)",
        description="Find the setting changes of runs that ended without undoing or keeping "
        "them (kill -9, a crash, a hangup when the SSH link dropped) and write the original "
        "values back, or with --keep keep them as they are. A device whose name now belongs to "
        "another device (another diskseq), or a host setting from another boot, is reported as "
        "stale and never touched. Needs root.",
    )
    p.add_argument("--dry-run", "-n", action="store_true", help="list them, write nothing")
    p.add_argument(
        "--keep",
        action="store_true",
        help="keep the values the dead run left (journaled as kept; nothing is written)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="put the original back even where the setting was changed since the run left it "
        "(by another run or by hand); without it such a setting is left as it is",
    )
    p.set_defaults(run=run)


def _current(tuner: Tuner, left: Leftover) -> str:
    if left.stale:
        return left.left
    if left.scope == HOST_SCOPE:
        value = tuner.read_host(left.setting)
    else:
        value = read_setting(tuner.roots, str(left.queue_device), left.setting).value
    return value if value is not None else "?"


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    keep = bool(getattr(args, "keep", False))
    force = bool(getattr(args, "force", False))
    if keep and force:
        raise UsageError("restore: --keep writes nothing, --force writes: give one of them")
    if not args.dry_run and not_live_reason(roots):
        raise UsageError(f"restore: {not_live_reason(roots)}")
    journal = Journal.in_dir(chosen_state_dir(getattr(args, "state_dir", None)))
    tuner = Tuner(roots, journal)
    try:
        leftovers = journal.leftovers(roots)
    except JournalError as exc:
        print(f"iotop-plus: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if not leftovers:
        print("nothing to restore: no leftover changes in the journal", file=sys.stderr)
        return EXIT_OK
    status = EXIT_OK
    try:
        for left in leftovers:
            current = _current(tuner, left)
            head = f"{left.where} {left.setting}: {current} -> {left.original}"
            if left.stale:
                detail = left.identity.removeprefix("stale: ")
                if args.dry_run:
                    print(f"{head}, stale ({detail}; would be closed, not written)", file=out)
                    continue
                journal.close_leftover(left, "stale")
                print(f"{head}, stale ({detail}; closed, not written)", file=out)
                continue
            if keep:
                # Nothing is written, so an unidentified device may be kept too.
                kept = f"{left.where} {left.setting}: {current} (original {left.original})"
                if args.dry_run:
                    print(f"{kept}, would keep (dry run)", file=out)
                    continue
                journal.close_leftover(left, "kept")
                print(f"{kept}, kept", file=out)
                continue
            if not _put_back(tuner, left, head, args.dry_run, force, out):
                status = EXIT_FAILURE
    finally:
        journal.close()
    if journal.problem:
        print(f"iotop-plus: warning: {journal.problem}", file=sys.stderr)
    return status


def _put_back(
    tuner: Tuner, left: Leftover, head: str, dry_run: bool, force: bool, out: TextIO
) -> bool:
    """Restore one leftover (or say what would be done); False when skipped or refused."""
    if not left.known:
        detail = left.identity.removeprefix("unknown: ")
        then = "sysctl -w" if left.scope == HOST_SCOPE else "`set`"
        print(f"{head}, skipped ({detail}; check it, then use {then})", file=out)
        return False
    if dry_run:
        conflict = tuner.leftover_conflict(left)
        if conflict is not None and not force:
            print(f"{head}, would refuse: {conflict.refusal('--force')}", file=out)
            return False
        print(f"{head}, would restore (dry run)", file=out)
        return True
    try:
        tuner.restore_leftover(left, on_conflict=FORCE if force else REFUSE)
    except ConflictError as exc:
        print(f"{head}, refused: {exc}", file=out)
        return False
    except TuningError as exc:
        print(f"{head}, skipped ({exc})", file=out)
        return False
    print(f"{head}, restored", file=out)
    return True
