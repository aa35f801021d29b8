"""``iotop-plus top``: the processes doing I/O, headless, like ``iotop -b -o``.

The first sample only sets the baseline: ``--count N`` reports N measured intervals.
Without ``--all``, only processes that did I/O (or waited on it) in the interval are listed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TextIO

from iotop_plus import __version__
from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, add_interval_count
from iotop_plus.commands.json_stream import JsonStream
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import frames_on_schedule
from iotop_plus.sampling.disks.sampler import read_host_info, select_devices
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import PROCESSES, Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.processes.delayacct import OFF_EXPLANATION, DelayAcct
from iotop_plus.sampling.processes.rates import ProcessSample, TaskKey, TaskRates
from iotop_plus.text import iotop_rate as human_rate
from iotop_plus.text import printable


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "top",
        help="print the processes doing I/O (like iotop -b -o) and exit",
        description="Print per-process disk I/O over measured intervals, like iotop -b -o. "
        "The first sample is only a baseline: --count N reports N intervals. DISK WRITE is "
        "net of cancelled writes; IO% needs kernel.task_delayacct=1.",
    )
    add_interval_count(p)
    p.add_argument(
        "--format", "-f", choices=("table", "json"), default="table", help="output (default table)"
    )
    p.add_argument(
        "--threads", "-t", action="store_true", help="one row per thread instead of per process"
    )
    p.add_argument(
        "--by",
        choices=("process", "cgroup"),
        default="process",
        help="rows per process (default) or per cgroup (io.stat, io.pressure; v1 blkio)",
    )
    p.add_argument(
        "--all",
        "-a",
        action="store_true",
        dest="show_all",
        help="every process, not only those doing I/O",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, roots: Roots, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit code."""
    out = out or sys.stdout
    if getattr(args, "by", "process") == "cgroup":
        from iotop_plus.commands import top_cgroup

        return top_cgroup.run(args, roots, out)
    host = read_host_info(roots)
    # Disks too (one diskstats read per tick): the host's totals, which a user who may not
    # read other users' /proc/PID/io sees nowhere else. A captured tree may have none.
    source = live_source(roots, devices=roots.diskstats.is_file())
    source.per_thread = args.threads
    source.want(PROCESSES, True)
    notes = Notes()
    try:
        reports = _intervals(source, args.interval, args.count, notes)
        if args.format == "json":
            doc: dict[str, Any] = {
                "tool": "iotop-plus",
                "version": __version__,
                "host": host.hostname,
                "kernel": host.kernel,
                "interval_s": args.interval,
                "per_thread": args.threads,
                "statistics": [],
            }
            stream = JsonStream(doc, out)
            try:
                for prev, cur, rates, disk in reports:
                    stream.add(interval_json(prev, cur, rates, args.show_all, disk))
            except KeyboardInterrupt:
                with contextlib.suppress(OSError):
                    stream.close()  # Ctrl-C: the intervals so far, as a whole document
                raise
            stream.close()
        else:
            for prev, cur, rates, disk in reports:
                out.write(render_table(prev, cur, rates, args.show_all, disk))
                out.flush()
    except ProcessesUnreadable as exc:
        print(f"iotop-plus: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        source.close()
    return EXIT_OK


def _intervals(source: LiveSource, interval: float, count: int, notes: Notes) -> Iterator[Report]:
    for prev, cur in frames_on_schedule(source, interval, count, on_frame=_check):
        assert prev.processes is not None and cur.processes is not None
        for problem in cur.processes.sample.problems:
            print(f"iotop-plus: warning: skipped {problem}", file=sys.stderr)
        notes.say(cur.processes.sample)
        disk = host_disk(cur) if source.devices else None
        yield prev.processes.sample, cur.processes.sample, cur.processes.rates, disk


@dataclass(frozen=True)
class HostDisk:
    """The host's disk throughput over one interval, from diskstats (every process's I/O,
    whoever may read it)."""

    read_bps: float
    """Bytes per second read from the devices below."""
    write_bps: float
    """Bytes per second written to them."""
    devices: tuple[str, ...]
    """The devices summed: whole disks the TUI shows by default, without dm or md volumes
    built on others (their I/O is already counted on the disks below them)."""


Report = tuple[ProcessSample, ProcessSample, Mapping[TaskKey, TaskRates | None], HostDisk | None]
"""One interval: the two process samples, the rates, and the host's disk totals."""


def host_disk(frame: Frame) -> HostDisk | None:
    """The host's totals from a frame's disk rates; None before there are rates."""
    names = []
    for name in select_devices(frame.sample.counters, frame.inventory, hide_virtual=True):
        dev = frame.inventory.get(name)
        if dev is None or not dev.slaves:
            names.append(name)
    rates = [r for r in (frame.rates.get(n) for n in names) if r is not None]
    if not rates:
        return None
    return HostDisk(
        sum(r.rkb_s for r in rates) * 1024,
        sum(r.wkb_s for r in rates) * 1024,
        tuple(n for n in names if frame.rates.get(n) is not None),
    )


def totals_unknown(cur: ProcessSample) -> bool:
    """Whether the sum over processes is not the host's: others' I/O could not be read."""
    return bool(cur.unreadable) and not cur.as_root


class Notes:
    """What the figures cannot say, on stderr, one line each the first time (not per
    interval: the unreadable count changes every interval)."""

    def __init__(self) -> None:
        self.said: set[str] = set()

    def say(self, cur: ProcessSample) -> None:
        """Print the notes of ``cur`` not printed yet."""
        for kind, text in _notes_by_kind(cur):
            if kind not in self.said:
                self.said.add(kind)
                print(f"iotop-plus: note: {text}", file=sys.stderr)


def _check(frame: Frame) -> None:
    if frame.process_error is not None:
        raise ProcessesUnreadable(frame.process_error)


class ProcessesUnreadable(Exception):
    """/proc could not be read: one line for the user."""


def selected(
    rates: Mapping[TaskKey, TaskRates | None], show_all: bool
) -> list[tuple[TaskKey, TaskRates | None]]:
    """The rows to show, busiest first (DISK READ + WRITE, then IO%, then PID)."""
    rows = [(k, r) for k, r in rates.items() if show_all or (r is not None and r.active)]

    def order(row: tuple[TaskKey, TaskRates | None]) -> tuple[float, float, int]:
        r = row[1]
        if r is None:
            return (1.0, 0.0, row[0][0])
        return (-r.disk_bps, -(r.io_wait_pct or 0.0), row[0][0])

    rows.sort(key=order)
    return rows


def _totals(rates: Mapping[TaskKey, TaskRates | None]) -> tuple[float, float]:
    read = sum(r.read_bps or 0.0 for r in rates.values() if r is not None)
    write = sum(r.write_bps or 0.0 for r in rates.values() if r is not None)
    return read, write


def _notes(cur: ProcessSample) -> list[str]:
    return [text for _, text in _notes_by_kind(cur)]


def _notes_by_kind(cur: ProcessSample) -> list[tuple[str, str]]:
    notes = []
    if cur.delayacct is DelayAcct.OFF:
        notes.append(("delayacct", OFF_EXPLANATION))
    message = cur.unreadable_message
    if message:
        if totals_unknown(cur):
            message += (
                "; the Total DISK figures are unknown (only the processes you can read are "
                "listed), the Host DISK figures come from diskstats"
            )
        notes.append(("unreadable", message))
    return notes


def interval_json(
    prev: ProcessSample,
    cur: ProcessSample,
    rates: Mapping[TaskKey, TaskRates | None],
    show_all: bool,
    disk: HostDisk | None = None,
) -> dict[str, Any]:
    """One interval as JSON: totals, notes and a row per process (rates in bytes/s).

    ``total_*`` is null when other users' processes could not be read (the sum of what
    could be read is ``readable_*``); ``host_*`` is the host's disks, from diskstats.
    """
    read, write = _totals(rates)
    unknown = totals_unknown(cur)
    rows = []
    for key, r in selected(rates, show_all):
        task = cur.tasks[key]
        row: dict[str, Any] = {"pid": task.pid}
        if cur.per_thread:
            row["tid"] = task.tid
        row.update(
            user=task.user,
            command=task.name,
            comm=task.comm,
            state=task.state,
            read_bps=_round(r.read_bps if r else None),
            write_bps=_round(r.write_bps if r else None),
            rchar_bps=_round(r.rchar_bps if r else None),
            wchar_bps=_round(r.wchar_bps if r else None),
            io_wait_pct=_round(r.io_wait_pct if r else None),
        )
        rows.append(row)
    return {
        "timestamp": _iso(cur.wall_time),
        "elapsed_s": round(cur.monotonic - prev.monotonic, 6),
        "total_read_bps": None if unknown else round(read, 1),
        "total_write_bps": None if unknown else round(write, 1),
        "readable_read_bps": round(read, 1),
        "readable_write_bps": round(write, 1),
        "host_read_bps": round(disk.read_bps, 1) if disk else None,
        "host_write_bps": round(disk.write_bps, 1) if disk else None,
        "host_devices": list(disk.devices) if disk else None,
        "delayacct": cur.delayacct.value,
        "unreadable": cur.unreadable,
        "notes": _notes(cur),
        "processes": rows,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def render_table(
    prev: ProcessSample,
    cur: ProcessSample,
    rates: Mapping[TaskKey, TaskRates | None],
    show_all: bool,
    disk: HostDisk | None = None,
) -> str:
    """iotop -b style text for one interval (what the figures cannot say is on stderr)."""
    read, write = _totals(rates)
    elapsed = cur.monotonic - prev.monotonic
    io_off = cur.delayacct is DelayAcct.OFF
    unknown = totals_unknown(cur)
    total_read, total_write = ("unknown", "unknown") if unknown else map(human_rate, (read, write))
    lines = [
        f"{_iso(cur.wall_time)}  interval {elapsed:.3f} s  "
        f"Total DISK READ: {total_read} | Total DISK WRITE: {total_write}"
    ]
    if disk is not None:
        more = len(disk.devices) - 4
        shown = ", ".join(disk.devices[:4]) + (f" +{more}" if more > 0 else "")
        lines.append(
            f"Host DISK READ: {human_rate(disk.read_bps)} | "
            f"Host DISK WRITE: {human_rate(disk.write_bps)}  (diskstats: {printable(shown)})"
        )
    if unknown:
        lines.append(
            f"Readable processes DISK READ: {human_rate(read)} | DISK WRITE: {human_rate(write)}"
            f"  ({cur.unreadable} unreadable)"
        )
    id_header = "TID" if cur.per_thread else "PID"
    lines.append(
        f"{id_header:>7} {'USER':<10} {'DISK READ':>11} {'DISK WRITE':>11} "
        f"{'RCHAR':>11} {'WCHAR':>11} {'IO%':>6}  COMMAND"
    )
    rows = selected(rates, show_all)
    for key, r in rows:
        task = cur.tasks[key]
        if r is None:
            cells = ["-"] * 4
            io = "-"
        else:
            cells = [human_rate(v) for v in (r.read_bps, r.write_bps, r.rchar_bps, r.wchar_bps)]
            # "off", not 0.00: zeros would claim the process never waited.
            io = "off" if io_off or r.io_wait_pct is None else f"{r.io_wait_pct:.2f}"
        lines.append(
            f"{task.tid:>7} {printable(task.user[:10]):<10} {cells[0]:>11} {cells[1]:>11} "
            f"{cells[2]:>11} {cells[3]:>11} {io:>6}  {printable(task.name)}"
        )
    if not rows:
        who = "process you can read" if unknown else "process"
        lines.append(f"(no {who} did I/O in this interval; --all lists every process)")
    return "\n".join(lines) + "\n\n"


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).astimezone().isoformat(timespec="seconds")
