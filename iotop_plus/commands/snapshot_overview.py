"""``iotop-plus snapshot --from RECORDING --overview``: a day at a glance, from the roll-ups.

Every closed chunk of a recording (about a minute) ends with a trailer that holds, per device,
the min, max and mean of IOPS, MB/s, await, %util and aqu-sz over the chunk's intervals. This
prints those and decodes no sample, so 24 hours at 200 devices print in about a second where
the per-interval report would decode 17 million counters. The chunk still being written has no
trailer yet: the overview ends at the last closed chunk and says so.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, TextIO

from iotop_plus.commands.common import EXIT_FAILURE, UsageError
from iotop_plus.commands.snapshot_output import iso_time
from iotop_plus.record.chunks import ROLLUP_METRICS, ROLLUP_STATS
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.timeline import RecordingTimeline
from iotop_plus.text import five_chars, printable, printable_doc

LABELS = {"iops": "IOPS", "mbps": "MB/s", "await": "await ms", "util": "%util", "aqu": "aqu-sz"}
"""Table headings of the roll-up's figures."""


@dataclass(frozen=True)
class Minute:
    """One chunk's roll-up: the window it covers and its figures per device."""

    start: float
    """Wall time of the sample before the chunk's first interval."""
    first: float
    """Wall time of the chunk's first sample (its minute names the row)."""
    end: float
    """Wall time of the chunk's last sample."""
    seconds: float
    devices: dict[str, dict[str, dict[str, float]]]
    """Device name to metric to ``{"min", "max", "mean"}``."""


def chunk_minutes(files: Sequence[RecordingFile], start: float, end: float) -> Iterator[Minute]:
    """The roll-up of each closed chunk whose window overlaps ``[start, end]``, file by file."""
    for rec in files:
        for i, chunk in enumerate(rec.chunks):
            if chunk.trailer is None or chunk.last_ns / 1e9 < start:
                continue
            doc = rec.rollup(i)
            seconds = float(doc.get("seconds") or 0)
            if not seconds:
                continue  # unreadable, or a chunk of one sample
            first = chunk.last_ns / 1e9 - seconds
            if first > end:
                break
            names = doc["devices"]
            devices = {
                name: {m: {key: doc[m][key][j] for key in ROLLUP_STATS} for m in ROLLUP_METRICS}
                for j, name in enumerate(names)
            }
            yield Minute(first, chunk.first_ns / 1e9, chunk.last_ns / 1e9, seconds, devices)


def minutes(files: Sequence[RecordingFile], start: float, end: float) -> list[Minute]:
    """One roll-up a wall-clock minute, in time order.

    A chunk ends at each minute and also when devices come or go, so a minute can hold
    several chunks: they are merged (min of the mins, max of the maxes, means weighted by
    seconds, await's by I/Os). Where two files hold the same minute (the clock stepped back),
    the later file's wins.
    """
    by_minute: dict[int, list[Minute]] = {}
    owner: dict[int, int] = {}
    for index, rec in enumerate(files):
        for row in chunk_minutes([rec], start, end):
            key = math.floor(row.first / 60)
            if owner.get(key, index) != index:
                by_minute[key] = []  # a later file holds this minute too: it wins
            owner[key] = index
            by_minute.setdefault(key, []).append(row)
    return [_merged(by_minute[key]) for key in sorted(by_minute)]


def _merged(rows: list[Minute]) -> Minute:
    if len(rows) == 1:
        return rows[0]
    devices: dict[str, dict[str, dict[str, float]]] = {}
    names = list(dict.fromkeys(name for row in rows for name in row.devices))
    for name in names:
        parts = [(row.seconds, row.devices[name]) for row in rows if name in row.devices]
        figures: dict[str, dict[str, float]] = {}
        for m in ROLLUP_METRICS:
            weights = [
                s * f["iops"]["mean"] if m == "await" else s for s, f in parts
            ]  # await is per I/O
            if sum(weights) <= 0:
                weights = [s for s, _ in parts]
            total = sum(weights)
            figures[m] = {
                "min": min(f[m]["min"] for _, f in parts),
                "max": max(f[m]["max"] for _, f in parts),
                "mean": sum(w * f[m]["mean"] for w, (_, f) in zip(weights, parts, strict=True))
                / total
                if total > 0
                else 0.0,
            }
        devices[name] = figures
    return Minute(
        min(r.start for r in rows),
        min(r.first for r in rows),
        max(r.end for r in rows),
        sum(r.seconds for r in rows),
        devices,
    )


def run_overview(
    args: argparse.Namespace,
    out: TextIO,
    timeline: RecordingTimeline,
    start: float,
    end: float,
) -> int:
    """Print the roll-ups of ``[start, end]``; returns the exit code."""
    if args.interval is not None:
        raise UsageError("--overview prints the stored per-minute roll-ups: drop --interval")
    rows = minutes(timeline.files, start, end)
    if not rows:
        print(
            "iotop-plus: error: no closed chunk (minute) of the recording falls in that window "
            f"({printable(args.from_path)}); the one being written has no roll-up yet",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    names = _devices(args, rows)
    tz = timeline.zone
    host = timeline.host_info().hostname
    if args.format == "json":
        _json(out, host, rows, names, tz)
    elif args.format == "csv":
        _csv(out, rows, names, tz)
    else:
        _table(out, host, rows, names, tz)
    open_chunks = sum(1 for rec in timeline.files for c in rec.chunks if c.trailer is None)
    if open_chunks and rows[-1].end < end:
        print(
            "iotop-plus: note: the last chunk is still open (no roll-up yet); "
            "snapshot --from without --overview reads its samples",
            file=sys.stderr,
        )
    return 0


def _devices(args: argparse.Namespace, rows: list[Minute]) -> list[str]:
    """Named devices (each must be in the roll-ups), else every device that did I/O in the
    window (with ``--all``, every device)."""
    seen: dict[str, bool] = {}
    for row in rows:
        for name, figures in row.devices.items():
            seen[name] = seen.get(name, False) or figures["iops"]["max"] > 0
    if args.devices:
        wanted = [d.removeprefix("/dev/") for d in args.devices]
        missing = [d for d in wanted if d not in seen]
        if missing:
            known = ", ".join(sorted(seen)[:8]) + (" ..." if len(seen) > 8 else "")
            raise UsageError(
                f"no device {printable(missing[0])} in the recording's roll-ups (it has: {known})"
            )
        return wanted
    return [name for name, busy in seen.items() if busy or args.show_all]


def _json(out: TextIO, host: str, rows: list[Minute], names: list[str], tz: tzinfo) -> None:
    doc: dict[str, Any] = {
        "host": host,
        "minutes": [
            {
                "start": iso_time(row.start, tz),
                "end": iso_time(row.end, tz),
                "seconds": row.seconds,
                "devices": {n: row.devices[n] for n in names if n in row.devices},
            }
            for row in rows
        ],
    }
    json.dump(printable_doc(doc), out, indent=2)
    out.write("\n")


def _csv(out: TextIO, rows: list[Minute], names: list[str], tz: tzinfo) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["start", "end", "device"] + [f"{m}_{key}" for m in ROLLUP_METRICS for key in ROLLUP_STATS]
    )
    for row in rows:
        for name in names:
            figures = row.devices.get(name)
            if figures is not None:
                writer.writerow(
                    [iso_time(row.start, tz), iso_time(row.end, tz), name]
                    + [figures[m][key] for m in ROLLUP_METRICS for key in ROLLUP_STATS]
                )


def _table(out: TextIO, host: str, rows: list[Minute], names: list[str], tz: tzinfo) -> None:
    """Mean and max per metric, five characters a figure: 73 columns with a 7-letter device."""
    width = max([len(n) for n in names] + [6])
    out.write(f"{printable(host)}: per-minute roll-ups (mean and max of the minute's intervals)\n")
    head = f"{'time':<5} {'device':<{width}}" + "".join(
        f"  {LABELS[m]:<11}" for m in ROLLUP_METRICS
    )
    sub = f"{'':<5} {'':<{width}}" + "".join(f"  {'mean':>5} {'max':>5}" for _ in ROLLUP_METRICS)
    out.write(head.rstrip() + "\n" + sub + "\n")
    for row in rows:
        clock = iso_time(row.first, tz)[11:16]
        for name in names:
            figures = row.devices.get(name)
            if figures is None:
                continue
            cells = "".join(
                f"  {five_chars(figures[m]['mean']):>5} {five_chars(figures[m]['max']):>5}"
                for m in ROLLUP_METRICS
            )
            out.write(f"{clock:<5} {printable(name):<{width}}{cells}\n")
            clock = ""
