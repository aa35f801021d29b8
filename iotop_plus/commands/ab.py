"""``iotop-plus ab DEV SETTING=V1,V2 --preset NAME --target PATH``: an A/B of a queue setting.

Each value is applied through the journaled tuner, the probe run, and the value undone; the
values alternate for ``--rounds`` rounds. SIGINT, SIGTERM and SIGHUP stop it: fio is killed
and the original value is back before the command exits (128 + the signal number).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import signal
import sys
from dataclasses import asdict
from typing import Any, TextIO

from iotop_plus.commands.common import (
    EXIT_FAILURE,
    EXIT_OK,
    UsageError,
    add_trace_option,
    positive_int,
    run_cancellable,
)
from iotop_plus.devices.tuner import Journal, Tuner, TuningError
from iotop_plus.devices.writers import not_live_reason
from iotop_plus.probe.experiment_plans import (
    AB_SETTINGS,
    DEFAULT_ROUNDS,
    AbResult,
    AbRun,
    ab_table,
    parse_ab_spec,
)
from iotop_plus.probe.experiments import ExperimentError, run_ab
from iotop_plus.probe.history import ProbeHistory
from iotop_plus.probe.presets import EDITABLE, PRESETS, parse_assignments, with_overrides
from iotop_plus.probe.runner import ProbeProgress, ProbeRunner, stop_all_probes
from iotop_plus.probe.target import remove_all_probe_files
from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import printable
from iotop_plus.state import chosen_state_dir


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "ab",
        help="A/B test a queue setting: alternate values, run a probe, compare medians",
        description="Apply each value of a queue setting in turn (through the journaled "
        "tuner), run the probe, and compare the medians and ranges. The original value is "
        "restored at the end, on error and on Ctrl-C. read_ahead_kb is compared on buffered "
        "sequential reads, with the device I/Os fio's disk_util counted against fio's own.",
    )
    p.add_argument("device", metavar="DEV", help="kernel name of the device, e.g. nvme0n1")
    p.add_argument(
        "spec",
        metavar="SETTING=V1,V2[,...]",
        help=f"the setting ({', '.join(AB_SETTINGS)}) and the values to compare",
    )
    p.add_argument(
        "--preset",
        "-p",
        required=True,
        choices=sorted(PRESETS),
        metavar="NAME",
        help="the probe: " + ", ".join(sorted(PRESETS)) + " (read_ahead_kb always runs a "
        "buffered sequential read)",
    )
    p.add_argument(
        "--target",
        "-t",
        required=True,
        metavar="PATH",
        help="a directory (a probe file is made in it) or a block device (read presets only)",
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"rounds (each runs every value once; default {DEFAULT_ROUNDS})",
    )
    p.add_argument("--runtime", "-r", metavar="S", help="seconds per run (default 5)")
    p.add_argument(
        "--set",
        "-s",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="edit a probe parameter: " + "; ".join(f"{k} ({v})" for k, v in EDITABLE.items()),
    )
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    add_trace_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    preset = PRESETS[args.preset]
    try:
        setting, values = parse_ab_spec(args.spec)
        overrides = parse_assignments(list(args.set))
        overrides.setdefault("runtime", args.runtime or "5")
        params = with_overrides(preset.params, overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not_live_reason(roots):
        raise UsageError(f"ab: {not_live_reason(roots)}")
    tuner = Tuner(roots, Journal.in_dir(chosen_state_dir(getattr(args, "state_dir", None))))
    if not tuner.is_root:
        raise UsageError("an A/B changes queue settings: run it as root")
    atexit.register(stop_all_probes)
    runner = ProbeRunner(roots, trace=args.trace)

    def on_run(r: AbRun) -> None:
        if not args.quiet:
            dev = f"  device I/Os {r.device_ios:,}" if r.device_ios is not None else ""
            print(
                f"  round {r.round} {setting}={r.effective}: {r.iops:,.0f} IOPS  "
                f"{r.bw_kib_s / 1024:,.1f} MiB/s  mean {r.mean_lat_us:,.1f} µs  "
                f"fio I/Os {r.fio_ios:,}{dev}",
                file=sys.stderr,
                flush=True,
            )

    def on_progress(round_no: int, value: str, p: ProbeProgress) -> None:
        if not args.quiet:
            print(
                f"  round {round_no} {setting}={value} {min(p.elapsed_s, p.runtime_s):3.0f}/"
                f"{p.runtime_s:.0f} s {p.iops:>11,.0f} IOPS",
                file=sys.stderr,
                flush=True,
            )

    if not args.quiet:
        print(
            f"iotop-plus: A/B of {args.device} {setting} {' vs '.join(values)}, "
            f"{args.rounds} rounds of {preset.name} on {args.target}...",
            file=sys.stderr,
        )
    # Each run is a probe result in the state directory's probes.jsonl, and the A/B too.
    history = ProbeHistory.load(chosen_state_dir(getattr(args, "state_dir", None)), keep=0)
    coro = run_ab(
        tuner,
        runner,
        args.device,
        setting,
        values,
        preset,
        args.target,
        params=params,
        rounds=args.rounds,
        on_run=on_run,
        on_progress=on_progress,
        history=history,
    )
    result: AbResult | None
    try:
        result, signum = asyncio.run(run_cancellable(coro))
    except (ExperimentError, TuningError) as exc:
        print(f"iotop-plus: A/B failed: {printable(str(exc))}", file=sys.stderr)
        _say_restored(tuner, args.device, setting)
        return EXIT_FAILURE
    finally:
        remove_all_probe_files()
        tuner.journal.close()
    if tuner.journal.problem:
        print(f"iotop-plus: warning: {tuner.journal.problem}", file=sys.stderr)
    if result is None:
        print(f"iotop-plus: A/B stopped by {signal.Signals(signum).name}", file=sys.stderr)
        _say_restored(tuner, args.device, setting)
        return 128 + signum
    history.add_experiment("ab", result)
    for note in history.notes:
        print(f"iotop-plus: note: {note}", file=sys.stderr)
    if args.format == "json":
        doc = {"tool": "iotop-plus", "experiment": "ab", **asdict(result)}
        json.dump(doc, out, indent=2)
        out.write("\n")
    else:
        out.write(
            f"A/B of {result.device} {result.setting} on {result.target} ({result.preset}), "
            f"{args.rounds} rounds\n"
        )
        out.write(ab_table(result))
    return EXIT_OK if result.restored else EXIT_FAILURE


def _say_restored(tuner: Tuner, device: str, setting: str) -> None:
    if not tuner.journal.entries:
        return  # stopped before the first change: nothing to restore
    try:
        value = tuner.read_one(device, setting).value
    except Exception as exc:
        print(f"iotop-plus: cannot read {device} {setting} back: {exc}", file=sys.stderr)
        return
    print(f"iotop-plus: {device} {setting} is {value}", file=sys.stderr)
