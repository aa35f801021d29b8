"""``iotop-plus sweep --target PATH``: random reads at QD 1, 2, 4 ... up to ``--max-qd``.

Progress goes to stderr, the table (or JSON) to stdout. SIGINT, SIGTERM and SIGHUP stop the
sweep: fio is killed, the probe file removed, and the steps done so far are printed.
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
from iotop_plus.devices.journal import Journal
from iotop_plus.probe.experiment_plans import (
    DEFAULT_MAX_QD,
    DEFAULT_STEP_RUNTIME_S,
    SweepResult,
    SweepStep,
    analyze_sweep,
    sweep_table,
)
from iotop_plus.probe.experiments import run_sweep
from iotop_plus.probe.presets import PRESETS, parse_assignments, with_overrides
from iotop_plus.probe.run_types import ProbeProgress
from iotop_plus.probe.target import device_busy_note
from iotop_plus.roots import Roots
from iotop_plus.text import printable

_READ_PRESETS = sorted(name for name, p in PRESETS.items() if not p.writes)


MAX_STEP_RUNTIME_S = 3600
"""The longest step, as ``probe --runtime`` allows: a typo must not book a device for days."""


def _step_runtime(text: str) -> int:
    seconds = positive_int(text)
    if seconds > MAX_STEP_RUNTIME_S:
        raise argparse.ArgumentTypeError(f"{text}: at most {MAX_STEP_RUNTIME_S} seconds")
    return seconds


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "sweep",
        help="queue-depth sweep: IOPS and latency at QD 1, 2, 4 ... (read-only)",
        description="Run random reads at QD 1, 2, 4 ... up to --max-qd, one fio run per "
        "step, and report where IOPS stop scaling, where latency rises on a plateau, and "
        "the QD that reaches 90% of peak IOPS. A device target is only read.",
    )
    add_target_option(p, "a block device (read-only) or a directory (a probe file is made in it)")
    p.add_argument(
        "--max-qd",
        type=positive_int,
        default=DEFAULT_MAX_QD,
        metavar="N",
        help=f"deepest queue (default {DEFAULT_MAX_QD}, at most 1024)",
    )
    p.add_argument(
        "--step-runtime",
        type=_step_runtime,
        default=DEFAULT_STEP_RUNTIME_S,
        metavar="S",
        help=f"seconds per step, 1 to {MAX_STEP_RUNTIME_S} (default {DEFAULT_STEP_RUNTIME_S})",
    )
    p.add_argument(
        "--preset",
        choices=_READ_PRESETS,
        default="randread",
        help="the read pattern run at each QD (default randread: 4k random reads)",
    )
    add_output_options(
        p, "edit a parameter: bs, size, ioengine (iodepth, numjobs and direct are the sweep's)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    if args.max_qd > 1024:
        raise UsageError(f"--max-qd must be at most 1024: {args.max_qd}")
    preset = PRESETS[args.preset]
    try:
        overrides = parse_assignments(list(args.set))
        for key in ("iodepth", "numjobs", "direct", "runtime"):
            if key in overrides:
                raise ValueError(f"{key} is set by the sweep itself")
        params = with_overrides(preset.params, overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    busy = device_busy_note(args.target, roots)  # a sweep only reads: it says so, and runs
    if busy:
        print(f"iotop-plus: note: {printable(busy)}", file=sys.stderr)
    cli = ExperimentCli(args, "sweep", "sweep")
    runner = cli.runner(roots)
    steps: list[SweepStep] = []

    def on_step(step: SweepStep) -> None:
        steps.append(step)
        p99 = f"{step.p99_us:,.0f}" if step.p99_us is not None else "-"
        cli.progress(
            f"  QD {step.qd:>4}: {step.iops:>11,.0f} IOPS  mean {step.mean_lat_us:,.1f} µs"
            f"  p99 {p99} µs"
        )

    def on_progress(qd: int, p: ProbeProgress) -> None:
        cli.progress(
            f"  QD {qd:>4} {min(p.elapsed_s, p.runtime_s):3.0f}/{p.runtime_s:.0f} s "
            f"{p.iops:>11,.0f} IOPS"
        )

    cli.progress(
        f"iotop-plus: sweep {preset.name} ({params.bs}) on {args.target}, QD 1..{args.max_qd}"
        f", {args.step_runtime} s per step..."
    )
    history = cli.history()
    coro = run_sweep(
        runner,
        args.target,
        max_qd=args.max_qd,
        step_runtime_s=args.step_runtime,
        preset=preset,
        params=params,
        on_step=on_step,
        on_progress=on_progress,
        journal=Journal.in_dir(cli.state_dir),
        history=history,
    )
    ran = cli.run(coro)
    if ran is None:
        return EXIT_FAILURE
    result, signum = ran
    if result is None:
        code = cli.stopped(signum, f" after {len(steps)} steps")
        if steps:
            result = SweepResult(
                args.target,
                None,
                preset.name,
                params.bs,
                args.step_runtime,
                tuple(steps),
                analyze_sweep(steps),
                complete=False,
            )
            history.add_experiment("sweep", result)
            _print(cli, result, out)
        return code
    cli.record(history, result)
    _print(cli, result, out)
    return EXIT_OK


def _print(cli: ExperimentCli, result: SweepResult, out: TextIO) -> None:
    if cli.args.format == "json":
        cli.dump_json(result, out, summary=result.analysis.summary())
        return
    on = f" (device {result.device})" if result.device else ""
    out.write(
        f"QD sweep: {result.preset} {result.bs} on {result.target}{on}, "
        f"{result.step_runtime_s} s per step"
        + ("" if result.complete else " (stopped early)")
        + "\n"
    )
    out.write(sweep_table(result.steps))
    for line in result.analysis.summary():
        out.write(f"{line}\n")
