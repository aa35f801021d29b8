"""``iotop-plus set DEV SETTING=VALUE...``: change queue settings, all or nothing.

Every value is validated before the first write and read back after it; the output shows
old -> effective per setting. If any write fails, those already made are rolled back. Each
change is journaled in the state directory before it is made (no journal, no change) and
closed as kept once applied; ``--no-journal`` is the only way around an unusable journal.
A dead run's leftover on the device refuses the change (``iotop-plus restore`` first; the hint
carries ``--state-dir`` when one was given).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError
from iotop_plus.devices.boot_export import shell_script, udev_rules
from iotop_plus.devices.changes import Change, predicted_side_effects, write_order
from iotop_plus.devices.journal import Journal, JournalError
from iotop_plus.devices.settings import (
    SETTINGS,
    SettingError,
    adjustment_note,
    predict_effective,
    queue_device,
    raise_not_writable,
)
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import not_live_reason
from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.inventory import Inventory, read_inventory
from iotop_plus.state import chosen_state_dir


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "set",
        help="change queue settings (read-ahead, scheduler...) with read-back, all or nothing",
        description="Change queue settings of one device. Values are checked before anything "
        "is written and read back after; the kernel may round or clamp them, and the value it "
        "kept is shown. If one setting fails, the others are put back. Settings: "
        + ", ".join(SETTINGS)
        + ". Needs root.",
    )
    p.add_argument("device", metavar="DEV", help="kernel name, /dev path or dm name")
    p.add_argument(
        "assignments",
        nargs="+",
        metavar="SETTING=VALUE",
        help="e.g. read_ahead_kb=16 scheduler=mq-deadline (scheduler and max_sectors_kb are "
        "applied first, since they reset other settings)",
    )
    p.add_argument("--dry-run", "-n", action="store_true", help="check the values, write nothing")
    p.add_argument(
        "--udev-rule",
        metavar="FILE",
        help="also write a udev rules file that sets these values at boot ('-' for stdout)",
    )
    p.add_argument(
        "--script", metavar="FILE", help="also write an equivalent shell script ('-' for stdout)"
    )
    p.add_argument(
        "--no-journal",
        action="store_true",
        help="change even without a usable journal: nothing is recorded, the change is kept "
        "and `iotop-plus restore` will never know of it",
    )
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    p.set_defaults(run=run)


def parse_assignments(items: list[str]) -> list[tuple[str, str]]:
    """``["read_ahead_kb=16"]`` -> ``[("read_ahead_kb", "16")]``.

    Raises:
        UsageError: for a missing ``=`` or an unknown setting.
    """
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"expected SETTING=VALUE, got {item!r}")
        if name not in SETTINGS:
            raise UsageError(f"unknown setting {name!r} (known: {', '.join(SETTINGS)})")
        pairs.append((name, value))
    return pairs


def resolve_device(roots: Roots, arg: str, inventory: Inventory) -> str:
    """The kernel name for ``arg`` (kernel name, ``/dev/...`` or dm name)."""
    base = arg.removeprefix("/dev/")
    if "/" not in base and base and (roots.sys_class_block / base).exists():
        return base
    dev = inventory.lookup(arg)
    if dev is None:
        raise UsageError(f"unknown device {arg!r}")
    return dev.name


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    assignments = parse_assignments(args.assignments)
    inventory = read_inventory(roots)
    device = resolve_device(roots, args.device, inventory)
    for path in (args.udev_rule, args.script):
        if path and path != "-" and os.path.lexists(path):
            raise UsageError(f"{path} already exists; remove it or name another file")
    if not args.dry_run and not_live_reason(roots):
        raise UsageError(f"set: {not_live_reason(roots)}")
    journaled = not (args.dry_run or args.no_journal)
    state_dir = chosen_state_dir(getattr(args, "state_dir", None))
    journal = Journal.in_dir(state_dir) if journaled else Journal(None)
    tuner = Tuner(roots, journal)

    try:
        if args.dry_run:
            planned = _dry_run(tuner, device, assignments)
        else:
            refusal = journal.leftover_refusal(roots, device)
            if refusal:
                print(f"iotop-plus: error: {refusal}", file=sys.stderr)
                return EXIT_FAILURE
            changes = tuner.apply_many(device, assignments)
            # A headless set is meant to last: closed as kept, never a leftover.
            tuner.keep("set")
    except JournalError as exc:
        print(f"iotop-plus: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except SettingError as exc:
        print(f"iotop-plus: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if exc.kind == "invalid" else EXIT_FAILURE
    finally:
        journal.close()
    if tuner.journal.problem:
        print(f"iotop-plus: warning: {tuner.journal.problem}", file=sys.stderr)
    if args.no_journal and not args.dry_run:
        print("iotop-plus: not journaled (--no-journal): the change is kept", file=sys.stderr)

    qdev = queue_device(roots, device)
    if args.dry_run:
        values = {qdev: {p.setting: p.new for p in planned}}
        _print_dry_run(out, args.format, device, qdev, planned)
    else:
        values = {qdev: {c.setting: c.effective for c in changes}}
        _print_changes(out, args.format, device, changes)
    status = EXIT_OK
    for path, text in (
        (args.udev_rule, lambda: udev_rules(values, inventory)),
        (args.script, lambda: shell_script(values, inventory)),
    ):
        if path:
            status = max(status, _export(path, text(), out))
    return status


@dataclass(frozen=True)
class PlannedChange:
    """What a dry run would do to one setting."""

    setting: str
    """The setting."""
    old: str | None
    """Its value now."""
    new: str
    """The validated value that would be written."""
    effective: str | None
    """What the kernel would keep (read-ahead is rounded to pages...); None when unknown."""
    note: str | None
    """Why ``effective`` differs from ``new``."""
    side_effects: tuple[tuple[str, str | None], ...]
    """(setting, its value now) of the settings the write would reset."""


def _dry_run(tuner: Tuner, device: str, assignments: list[tuple[str, str]]) -> list[PlannedChange]:
    planned: list[PlannedChange] = []
    assigned = {name for name, _ in assignments}
    for setting, text in sorted(assignments, key=lambda a: write_order(a[0])):
        value = tuner.validate(device, setting, text)
        current = tuner.read_one(device, setting)
        if not current.writable:
            raise_not_writable(current)
        effective = predict_effective(tuner.roots, current, value)
        note = adjustment_note(tuner.roots, setting, current.queue_device, value, effective)
        effects = tuple(
            (name, tuner.read_one(device, name).value)
            for name in predicted_side_effects(setting, current.value, value)
            # A setting also assigned here is written after the reset (write_order).
            if name not in assigned
        )
        planned.append(PlannedChange(setting, current.value, value, effective, note, effects))
    return planned


def _print_dry_run(
    out: TextIO, fmt: str, device: str, qdev: str, planned: list[PlannedChange]
) -> None:
    if fmt == "json":
        doc = {
            "device": device,
            "queue_device": qdev,
            "dry_run": True,
            "planned": {p.setting: p.new for p in planned},
            "changes": [
                {
                    "setting": p.setting,
                    "old": p.old,
                    "new": p.new,
                    "effective": p.effective,
                    "note": p.note,
                    "side_effects": [{"setting": n, "now": v} for n, v in p.side_effects],
                }
                for p in planned
            ],
        }
        out.write(json.dumps(doc, indent=2) + "\n")
        return
    via = f" (via {qdev}'s queue)" if qdev != device else ""
    for p in planned:
        line = f"{device} {p.setting}: {p.old or '-'} -> {p.new}{via}"
        if p.note:
            line += f" (kernel keeps {p.effective}: {p.note})"
        print(line, file=out)
        for name, now in p.side_effects:
            print(f"  side effect: {name} will be reset (now {now or '-'})", file=out)
    print("dry run: nothing written", file=out)


def _print_changes(out: TextIO, fmt: str, device: str, changes: tuple[Change, ...]) -> None:
    if fmt == "json":
        doc = {"device": device, "dry_run": False, "changes": [c.to_json() for c in changes]}
        out.write(json.dumps(doc, indent=2) + "\n")
        return
    for c in changes:
        line = f"{device} {c.setting}: {c.old} -> {c.effective}"
        if c.effective != c.new:
            line += f" (asked {c.new}: {c.note})"
        for e in c.side_effects:
            line += f"; also {e.setting}: {e.old} -> {e.effective}"
        print(line, file=out)


def _export(path: str, text: str, out: TextIO) -> int:
    if path == "-":
        out.write(text)
        return EXIT_OK
    try:
        # O_EXCL: never overwrite a file we did not create.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    except OSError as exc:
        print(f"iotop-plus: error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    print(f"wrote {path}", file=sys.stderr)
    return EXIT_OK
