"""``iotop-plus probe PRESET --target PATH``: a safe fio probe, progress on stderr, the result
on stdout.

SIGINT, SIGTERM and SIGHUP (an SSH drop) cancel the probe: fio's process group is killed and
the probe file removed before the command exits with 128 + the signal number.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import signal
import sys
from dataclasses import asdict
from typing import Any, TextIO

from iotop_plus.commands import durability
from iotop_plus.commands.common import (
    EXIT_FAILURE,
    EXIT_OK,
    UsageError,
    add_trace_option,
    run_cancellable,
)
from iotop_plus.probe.block_latency import block_line
from iotop_plus.probe.durability_plan import DEFAULT_RUNTIME_S
from iotop_plus.probe.history import ProbeHistory, settings_in_force
from iotop_plus.probe.presets import EDITABLE, PRESETS, parse_assignments, with_overrides
from iotop_plus.probe.results import ProbeResult
from iotop_plus.probe.run_types import ProbeError, ProbeOutcome, ProbeProgress, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner, stop_all_probes
from iotop_plus.probe.target import ProbeTarget, device_busy_note, remove_all_probe_files
from iotop_plus.roots import Roots
from iotop_plus.state import StateDir, chosen_state_dir
from iotop_plus.text import printable


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    presets = "; ".join(f"{p.name}: {p.pattern}" for p in PRESETS.values())
    p = sub.add_parser(
        "probe",
        help="run a safe fio probe (a preset) on a directory or a device",
        description="Run a named fio probe. A directory target gets a probe file that is "
        "removed afterwards; a block device target is only read, unless a write preset is "
        "confirmed on an unused device with --confirm: the device is then held exclusively "
        f"(O_EXCL) until fio exits. Presets: {presets}.",
    )
    p.add_argument(
        "preset",
        choices=[*sorted(PRESETS), "durability"],
        metavar="PRESET",
        help=f"preset name, or {durability.HELP}",
    )
    p.add_argument(
        "--target",
        "-t",
        required=True,
        metavar="PATH",
        help="an existing directory (a probe file is made in it) or a block device",
    )
    p.add_argument(
        "--runtime",
        "-r",
        metavar="S",
        help="seconds to run (default 10: a quick probe; durability: "
        f"{DEFAULT_RUNTIME_S} s per method)",
    )
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    p.add_argument(
        "--set",
        "-s",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="edit a parameter: " + "; ".join(f"{k} ({v})" for k, v in EDITABLE.items()),
    )
    p.add_argument("--keep-json", metavar="FILE", help="also save fio's raw JSON to a new FILE")
    p.add_argument(
        "--confirm",
        metavar="DEVICE",
        help="for a write preset on an unused raw device: its name, to confirm destroying it",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    add_trace_option(p)
    p.set_defaults(run=run)


def build_request(args: argparse.Namespace) -> ProbeRequest:
    """The request from the parsed arguments.

    Raises:
        UsageError: a bad ``--set`` or ``--runtime``.
    """
    preset = PRESETS[args.preset]
    try:
        overrides = parse_assignments(list(args.set))
        if args.runtime is not None:
            overrides["runtime"] = args.runtime
        params = with_overrides(preset.params, overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return ProbeRequest(preset, params, args.target, confirm=args.confirm)


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    if args.preset == "durability":
        return durability.run(args, roots, out)
    request = build_request(args)
    if args.keep_json:
        # Claim the file first: never overwrite, and fail before spending the runtime.
        try:
            keep = open(args.keep_json, "x")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise UsageError(f"--keep-json {args.keep_json}: {exc.strerror}") from None
    else:
        keep = None
    if not request.preset.writes:  # a write probe refuses a device in use; a read one says so
        busy = device_busy_note(request.target, roots)
        if busy:
            print(f"iotop-plus: note: {printable(busy)}", file=sys.stderr)
    atexit.register(stop_all_probes)
    runner = ProbeRunner(roots, trace=args.trace)
    outcome: ProbeOutcome | None = None
    try:
        outcome, signum = asyncio.run(_probe(runner, request, quiet=args.quiet))
        if keep is not None and outcome is not None:
            keep.write(outcome.raw_json + "\n")
    except ProbeError as exc:
        print(f"iotop-plus: probe failed: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        remove_all_probe_files()
        if keep is not None:
            keep.close()
            if outcome is None:  # the file we claimed would stay empty
                os.unlink(args.keep_json)
    if outcome is None:
        print(f"iotop-plus: probe cancelled by {signal.Signals(signum).name}", file=sys.stderr)
        return 128 + signum
    _keep_in_history(args, roots, outcome)
    if args.format == "json":
        json.dump(result_json(outcome), out, indent=2)
        out.write("\n")
    else:
        out.write(render_result(outcome.result))
    return EXIT_OK


def _keep_in_history(args: argparse.Namespace, roots: Roots, outcome: ProbeOutcome) -> None:
    """Append the result to the state directory's probe history (``probes.jsonl``), which
    the TUI's Probe tab loads; a failure is one warning line, the result is still printed."""
    state = StateDir(chosen_state_dir(getattr(args, "state_dir", None)))
    history = ProbeHistory(state=state)
    history.add(outcome.result, settings_in_force(roots, outcome.result.device))
    state.close()
    for note in history.notes:
        print(f"iotop-plus: warning: {note}", file=sys.stderr)


async def _probe(
    runner: ProbeRunner, request: ProbeRequest, *, quiet: bool
) -> tuple[ProbeOutcome | None, int]:
    def started(target: ProbeTarget) -> None:
        if not quiet:
            print(
                f"iotop-plus: probe {request.preset.name} ({request.preset.pattern}) on "
                f"{target.label} for {request.params.runtime_s} s with {runner.find_fio()}...",
                file=sys.stderr,
            )

    return await run_cancellable(
        runner.run(request, on_progress=None if quiet else _print_progress, on_start=started)
    )


def _print_progress(p: ProbeProgress) -> None:
    print(
        f"  {min(p.elapsed_s, p.runtime_s):4.0f}/{p.runtime_s:.0f} s  {p.iops:12,.0f} IOPS  "
        f"{p.kib_s / 1024:9,.1f} MiB/s  lat {p.mean_lat_us:9,.1f} µs  "
        f"{p.time_left_s:.0f} s left",
        file=sys.stderr,
        flush=True,
    )


def result_json(outcome: ProbeOutcome) -> dict[str, Any]:
    """The result as JSON: every parsed figure, the hints, and the fio command run."""
    r = outcome.result
    doc: dict[str, Any] = {"tool": "iotop-plus", **asdict(r)}
    doc["iops"] = r.iops
    doc["bw_kib_s"] = r.bw_kib_s
    doc["mean_clat_us"] = r.mean_clat_us
    doc["quick_probe"] = r.quick_label or None
    doc["fio_argv"] = list(outcome.argv)
    return doc


def render_result(r: ProbeResult) -> str:
    """The result card as plain text."""
    p = r.params
    lines = [
        f"{r.title} ({r.preset}) on {r.target}",
        f"  {p.bs} x QD{p.iodepth} x {p.numjobs} jobs, {p.runtime_s} s, "
        f"engine {p.ioengine}, direct={int(p.direct)}, {r.fio_version}",
    ]
    if r.quick_label:
        lines.append(f"  NOTE: {r.quick_label}")
    lines += [f"  note: {n}" for n in r.notes]
    lines.append(
        f"  total: {r.iops:,.0f} IOPS  {r.bw_kib_s / 1024:,.1f} MiB/s  "
        f"mean clat {r.mean_clat_us:,.1f} µs"
    )
    for name, d in (("read", r.read), ("write", r.write)):
        if d is None:
            continue
        lines.append(
            f"  {name}: {d.iops:,.0f} IOPS ({d.iops_min:,.0f}-{d.iops_max:,.0f})  "
            f"{d.bw_kib_s / 1024:,.1f} MiB/s ({d.bw_min_kib_s / 1024:,.1f}-"
            f"{d.bw_max_kib_s / 1024:,.1f})  lat mean {d.lat_mean_us:,.1f} µs  "
            f"slat {d.slat_mean_us:,.1f} µs"
        )
        pcts = "  ".join(f"{label} {v:,.1f}" for label, v in d.clat.percentiles_us)
        lines.append(f"    clat µs: mean {d.clat.mean_us:,.1f}  {pcts}")
        if d.block is not None:
            lines.append(f"    device µs: {block_line(d.block)}")
    if r.flush_write is not None:  # writes with a preflush or FUA, kept out of the line above
        lines.append(f"  flush+write device µs: {block_line(r.flush_write)}")
    if r.fsync is not None:
        pcts = "  ".join(f"{label} {v:,.1f}" for label, v in r.fsync.percentiles_us)
        lines.append(f"  fsync µs: mean {r.fsync.mean_us:,.1f}  {pcts}")
    host = (
        f"  host CPU pressure {r.host_cpu_some_pct:.0f}%" if r.host_cpu_some_pct is not None else ""
    )
    lines.append(f"  CPU: usr {r.usr_cpu_pct:.1f}%  sys {r.sys_cpu_pct:.1f}%{host}")
    for u in r.disk_util:
        lines.append(
            f"  device {u.name}: {u.read_ios:,} reads {u.write_ios:,} writes served, "
            f"util {u.util_pct:.1f}%"
        )
    if r.placement:
        lines.append(f"  reference: {r.placement}")
    for h in r.hints:
        lines.append(f"  hint: {h.text}")
    return "\n".join(lines) + "\n"
