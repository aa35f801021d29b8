"""``iotop-plus probe durability --target DIR``: the sync methods of PostgreSQL and etcd, as
``pg_test_fsync`` compares them, with the device's cache beside them.

Progress goes to stderr, the table (or JSON) to stdout. SIGINT, SIGTERM and SIGHUP stop the
probe: fio is killed, the probe file removed, and the methods done so far are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, UsageError
from iotop_plus.commands.experiment_cli import ExperimentCli
from iotop_plus.probe.durability import run_durability
from iotop_plus.probe.durability_plan import (
    DEFAULT_RUNTIME_S,
    DurabilityResult,
    Method,
    MethodResult,
    durability_json,
    durability_text,
    method_line,
    plan,
)
from iotop_plus.probe.run_types import ProbeProgress
from iotop_plus.roots import Roots

__all__ = [
    "HELP",
    "run",
]

MAX_RUNTIME_S = 3600
"""The longest run per method, as ``probe --runtime`` allows."""

HELP = (
    "durability: PostgreSQL's wal_sync_method choices (open_datasync, fdatasync, fsync, "
    "open_sync) with one and two 8 KiB writes per op, as pg_test_fsync runs them, and etcd's "
    f"2300-byte fdatasync job, {DEFAULT_RUNTIME_S} s each by default (--runtime), on a probe "
    "file in a directory (never a device); with the device's write cache, FUA and mean flush "
    "time, and the fastest honest method"
)


def runtime_of(args: argparse.Namespace) -> int:
    """Seconds per method from ``--runtime``, else the default.

    Raises:
        UsageError: not a whole number from 1 to 3600, or an option the plan does not take.
    """
    for option, value in (("--set", args.set), ("--keep-json", args.keep_json)):
        if value:
            raise UsageError(f"{option} does not apply to probe durability")
    if args.confirm:
        raise UsageError("probe durability never writes to a device: give a directory")
    if args.runtime is None:
        return DEFAULT_RUNTIME_S
    try:
        seconds = int(args.runtime)
    except ValueError:
        raise UsageError(f"--runtime: not a whole number: {args.runtime!r}") from None
    if not 1 <= seconds <= MAX_RUNTIME_S:
        raise UsageError(f"--runtime: must be from 1 to {MAX_RUNTIME_S}: {args.runtime!r}")
    return seconds


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run ``probe durability``; returns the exit code."""
    out = out or sys.stdout
    runtime_s = runtime_of(args)
    cli = ExperimentCli(args, "durability", "durability probe")
    runner = cli.runner(roots)
    done: list[MethodResult] = []
    count = len(plan(runtime_s))

    def on_method(m: MethodResult) -> None:
        cli.progress(f"  {method_line(m)}")

    def on_progress(m: Method, p: ProbeProgress) -> None:
        cli.progress(
            f"  {m.label:<16} {min(p.elapsed_s, p.runtime_s):3.0f}/{p.runtime_s:.0f} s "
            f"{p.write_iops / m.writes_per_op:>10,.0f} ops/s"
        )

    cli.progress(
        f"iotop-plus: probe durability on {args.target}: {count} methods, {runtime_s} s each..."
    )
    history = cli.history()
    coro = run_durability(
        runner,
        args.target,
        runtime_s=runtime_s,
        on_method=on_method,
        on_progress=on_progress,
        history=history,
        done=done,
    )
    ran = cli.run(coro)
    if ran is None:
        return EXIT_FAILURE
    result, signum = ran
    if result is None:
        code = cli.stopped(signum, f" after {len(done)} of {count} methods")
        if cli.args.format == "json":
            doc = {"tool": "iotop-plus", "plan": "durability", "complete": False}
            doc["methods"] = [m.__dict__ for m in done]
            json.dump(doc, out, indent=2)
            out.write("\n")
        else:
            out.writelines(f"  {method_line(m)}\n" for m in done)
        return code
    cli.record(history, result)
    _print(cli, result, out)
    return EXIT_OK


def _print(cli: ExperimentCli, result: DurabilityResult, out: TextIO) -> None:
    if cli.args.format == "json":
        json.dump(durability_json(result), out, indent=2)
        out.write("\n")
        return
    out.write(durability_text(result))
