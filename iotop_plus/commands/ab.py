"""``iotop-plus ab DEV SETTING=V1,V2 --preset NAME --target PATH``: an A/B of a queue setting.

Each value is applied through the journaled tuner, the probe run, and the value undone; the
values alternate for ``--rounds`` rounds. SIGINT, SIGTERM and SIGHUP stop it: fio is killed
and the original value is back before the command exits (128 + the signal number).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, UsageError, positive_int
from iotop_plus.commands.experiment_cli import (
    ExperimentCli,
    add_output_options,
    add_target_option,
)
from iotop_plus.devices.conflicts import TuningError
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import not_live_reason
from iotop_plus.probe.experiment_plans import (
    AB_SETTINGS,
    DEFAULT_ROUNDS,
    AbResult,
    AbRun,
    ab_table,
    parse_ab_spec,
)
from iotop_plus.probe.experiments import run_ab
from iotop_plus.probe.preflight import ExperimentError
from iotop_plus.probe.presets import EDITABLE, PRESETS, parse_assignments, with_overrides
from iotop_plus.probe.run_types import ProbeProgress
from iotop_plus.roots import Roots


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
    add_target_option(
        p, "a directory (a probe file is made in it) or a block device (read presets only)"
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"rounds (each runs every value once; default {DEFAULT_ROUNDS})",
    )
    p.add_argument("--runtime", "-r", metavar="S", help="seconds per run (default 5)")
    add_output_options(
        p, "edit a probe parameter: " + "; ".join(f"{k} ({v})" for k, v in EDITABLE.items())
    )
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
    cli = ExperimentCli(args, "ab", "A/B")
    tuner = Tuner(roots, Journal.in_dir(cli.state_dir))
    if not tuner.is_root:
        raise UsageError("an A/B changes queue settings: run it as root")
    runner = cli.runner(roots)

    def on_run(r: AbRun) -> None:
        dev = f"  device I/Os {r.device_ios:,}" if r.device_ios is not None else ""
        cli.progress(
            f"  round {r.round} {setting}={r.effective}: {r.iops:,.0f} IOPS  "
            f"{r.bw_kib_s / 1024:,.1f} MiB/s  mean {r.mean_lat_us:,.1f} µs  "
            f"fio I/Os {r.fio_ios:,}{dev}"
        )

    def on_progress(round_no: int, value: str, p: ProbeProgress) -> None:
        cli.progress(
            f"  round {round_no} {setting}={value} {min(p.elapsed_s, p.runtime_s):3.0f}/"
            f"{p.runtime_s:.0f} s {p.iops:>11,.0f} IOPS"
        )

    cli.progress(
        f"iotop-plus: A/B of {args.device} {setting} {' vs '.join(values)}, "
        f"{args.rounds} rounds of {preset.name} on {args.target}..."
    )
    history = cli.history()
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
    ran = cli.run(
        coro,
        errors=(ExperimentError, TuningError),
        on_failure=lambda: _say_restored(tuner, args.device, setting),
        cleanup=tuner.journal.close,
    )
    if ran is None:
        return EXIT_FAILURE
    result, signum = ran
    if tuner.journal.problem:
        print(f"iotop-plus: warning: {tuner.journal.problem}", file=sys.stderr)
    if result is None:
        code = cli.stopped(signum)
        _say_restored(tuner, args.device, setting)
        return code
    cli.record(history, result)
    if args.format == "json":
        cli.dump_json(result, out)
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
