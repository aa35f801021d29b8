"""What a snapshot prints, live or from a recording: the iostat-style table, JSON and CSV
of a run of intervals, and the devices it names."""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from iotop_plus import __version__
from iotop_plus.commands.common import EXIT_OK, UsageError
from iotop_plus.commands.part_options import add_part_json
from iotop_plus.commands.snapshot_cpu import CpuTimes, avg_cpu
from iotop_plus.commands.snapshot_diagnosis import Reports, add_diagnosis, render_verdicts
from iotop_plus.sampling.disks.figures import IOSTAT_FIGURES, figure
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.disks.sampler import HostInfo, Platform, Sample, select_devices
from iotop_plus.sampling.frame.model import Frame, FrameEvent
from iotop_plus.sampling.memory.dirty import MemoryPart
from iotop_plus.sampling.pressure import Pressure
from iotop_plus.sampling.topology.inventory import Inventory
from iotop_plus.text import printable, printable_doc

if TYPE_CHECKING:  # the histograms load only with --latency (docs/performance.md)
    from iotop_plus.sampling.latency.hist import DeviceLatency, LatencyFrame


#: (iostat JSON key, DeviceRates attribute), in iostat -x column order.
IOSTAT_COLUMNS: tuple[tuple[str, str], ...] = tuple((f.json_key, f.key) for f in IOSTAT_FIGURES)


#: Table headers as iostat prints them (percentages carry a %), where they differ from the keys.
_TABLE_HEADERS = {f.json_key: f.title for f in IOSTAT_FIGURES if f.title != f.json_key}


#: The gauge iotop-plus adds after iostat's figures.
_IN_FLIGHT = figure("in_flight")


Report: TypeAlias = (
    "tuple[Sample, Sample, Mapping[str, DeviceRates | None], LatencyFrame | None,"
    " Pressure | None, Sequence[FrameEvent], Frame | None]"
)
"""One interval: the two samples, the rates, the latency histograms, the pressure, the
events of the frames in the interval, and the interval's last frame (its other parts:
memory, cgroups, issuers, health; None where there is none)."""


def event_json(event: FrameEvent, frame_wall: float, iso: Callable[[float], str]) -> dict:
    """One ``statistics[].events`` entry: ``{"time", "kind", "device", "text", "record"}``;
    a device event takes its frame's time, a journal line goes unchanged under ``record``."""
    wall = event.wall_time if event.wall_time is not None else frame_wall
    return {
        "time": iso(wall),
        "kind": event.kind,
        "device": event.device,
        "text": event.text,
        "record": dict(event.record) if event.record is not None else None,
    }


def emit(
    args: argparse.Namespace,
    out: TextIO,
    host: HostInfo,
    inventory: Inventory,
    explicit: list[str] | None,
    reports: Iterable[Report],
    interval: float,
    tz: tzinfo | None = None,
    platform: Platform | None = None,
    cpu: Mapping[float, CpuTimes | None] | None = None,
    earlier: Sequence[Frame] = (),
    prior: Callable[[str], Sequence[float]] | None = None,
) -> int:
    """Print the reports as a table, JSON or CSV (live, or from a recording in its zone).

    JSON is iostat's document (``sysstat.hosts[0]``); ``platform`` gives its ``sysname``,
    ``machine`` and ``number-of-cpus`` (null where unknown); ``cpu`` the CPU times read with
    each sample (by its monotonic time), for iostat's ``avg-cpu`` (null without);
    ``earlier`` the frames before the first report, which its verdicts look back on too, and
    ``prior`` each device's quiet awaits before them (its quiet baseline).
    """
    latency = bool(getattr(args, "latency", False))

    def _iso(wall: float) -> str:
        return iso_time(wall, tz)

    if args.format == "json":
        stats: list[dict[str, Any]] = []
        started: float | None = None  # the baseline's wall time: iostat's "date"
        pressure_note = PressureNote()
        recent = Reports(earlier, prior)  # the reports so far, for the verdict
        for prev, cur, rates, lat, pressure, events, frame in reports:
            if started is None:
                started = prev.wall_time
            names = _names(explicit, cur, inventory, args)
            disks = [disk_json(n, rates[n], inventory) for n in names if rates.get(n)]
            add_diagnosis(disks, frame, recent)
            if latency:
                for disk in disks:
                    seen = _device_latency(lat, disk["disk_device"])
                    disk["latency"] = seen.to_json() if seen is not None else None
            if getattr(args, "health", False):
                from iotop_plus.commands.snapshot_health import add_health

                add_health(disks, frame)
            if getattr(args, "issuers", False):
                from iotop_plus.commands.snapshot_issuers import add_issuers

                add_issuers(disks, frame)
            stat: dict[str, Any] = {
                "timestamp": _iso(cur.wall_time),
                "elapsed_s": round(cur.monotonic - prev.monotonic, 6),
                "avg-cpu": avg_cpu(cpu.get(prev.monotonic), cpu.get(cur.monotonic))
                if cpu is not None
                else None,
                "disk": disks,
                "no_rates": [n for n in names if rates.get(n) is None],
                "pressure": pressure_note.json(pressure),
                "events": [event_json(e, cur.wall_time, _iso) for e in events],
                "memory": memory_json(frame),
            }
            add_part_json(disks, stat, frame)
            stats.append(stat)
        doc = sysstat_json(host, platform or Platform(), started, tz, interval, stats)
        json.dump(printable_doc(doc), out, indent=2)
        out.write("\n")
    elif args.format == "csv":
        from iotop_plus.sampling.latency.hist import LATENCY_CSV_COLUMNS, csv_cells

        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(
            [
                "timestamp",
                "elapsed_s",
                "disk_device",
                "name",
                *(k for k, _ in IOSTAT_COLUMNS),
                _IN_FLIGHT.json_key,
                *(LATENCY_CSV_COLUMNS if latency else ()),
            ]
        )
        for prev, cur, rates, lat, _pressure, _events, _frame in reports:
            for name in _names(explicit, cur, inventory, args):
                r = rates.get(name)
                if r is None:
                    continue
                dev = inventory.get(name)
                writer.writerow(
                    [
                        _iso(cur.wall_time),
                        f"{cur.monotonic - prev.monotonic:.6f}",
                        printable(name),
                        printable(dev.friendly_name if dev else name),
                        *(f"{getattr(r, attr):.2f}" for _, attr in IOSTAT_COLUMNS),
                        r.in_flight,
                        *(csv_cells(_device_latency(lat, name)) if latency else ()),
                    ]
                )
            out.flush()
    else:
        print(
            f"{printable(host.hostname)}  Linux {printable(host.kernel)}  iotop-plus {__version__}",
            file=out,
        )
        verdicts = Reports(earlier, prior)
        for prev, cur, rates, lat, _pressure, _events, frame in reports:
            names = _names(explicit, cur, inventory, args)
            out.write(render_table(cur, prev, names, rates, inventory, tz))
            if latency:
                out.write(render_latency(names, lat))
            out.write(render_verdicts(args, names, frame, verdicts))  # --diagnose: why lines
            from iotop_plus.commands.snapshot_issuers import who_lines

            out.write(who_lines(args, names, frame))  # --issuers: who lines
            out.flush()
    return EXIT_OK


def sysstat_json(
    host: HostInfo,
    platform: Platform,
    started: float | None,
    tz: tzinfo | None,
    interval: float,
    statistics: list[dict[str, Any]],
) -> dict[str, Any]:
    """iostat's JSON document around our statistics: ``{"sysstat": {"hosts": [{...}]}}``.

    ``date`` is the day the first interval started, as ``S_TIME_FORMAT=ISO iostat`` prints
    it, in ``tz`` (the recorded host's zone) or this host's zone.
    """
    at = datetime.fromtimestamp(time.time() if started is None else started, timezone.utc)
    day = (at.astimezone(tz) if tz is not None else at.astimezone()).date().isoformat()
    return {
        "sysstat": {
            "hosts": [
                {
                    "nodename": host.hostname,
                    "sysname": platform.sysname,
                    "release": host.kernel,
                    "machine": platform.machine,
                    "number-of-cpus": platform.cpus,
                    "date": day,
                    "tool": "iotop-plus",
                    "version": __version__,
                    "interval_s": interval,
                    "statistics": statistics,
                }
            ]
        }
    }


def memory_json(frame: Frame | None) -> dict[str, Any] | None:
    """``statistics[].memory``: dirty, writeback and the thresholds (kB); null when the frame
    has none (a recording made before they were recorded), with one stderr line (once)."""
    memory = frame.get(MemoryPart) if frame is not None else None
    if memory is not None and memory.problem and memory.problem not in printed_notes:
        printed_notes.add(memory.problem)
        print(f"iotop-plus: note: {printable(memory.problem)}", file=sys.stderr)
    if memory is None or (memory.dirty_kB is None and memory.dirty_threshold_kB is None):
        return None
    return memory.as_json()


class PressureNote:
    """The ``pressure`` object of a statistic, or null with one stderr line (once) why not."""

    def __init__(self) -> None:
        self.said = False

    def json(self, pressure: Pressure | None) -> dict[str, Any] | None:
        """``pressure.as_json()``, or None where the host has no PSI."""
        if pressure is not None and pressure.resources:
            return pressure.as_json()
        if not self.said:
            self.said = True
            why = pressure.problem if pressure is not None else None
            why = printable(why or "no pressure (PSI) figures")
            print(f"iotop-plus: note: {why}", file=sys.stderr)
        return None


printed_notes: set[str] = set()
"""Notes already printed to stderr in this run (one line each): latency problems, memory."""


def _device_latency(lat: LatencyFrame | None, name: str) -> DeviceLatency | None:
    """A device's latency over the interval: empty (counts 0) when it did no traced I/O,
    None when the tracer was not tracing."""
    if lat is None or not lat.has_figures:
        return None
    from iotop_plus.sampling.latency.hist import DeviceLatency

    return lat.devices.get(name) or DeviceLatency({})


def render_latency(names: Sequence[str], lat: LatencyFrame | None) -> str:
    """The latency lines under one interval's table (ms; ``-`` where nothing completed)."""
    if lat is None or not lat.has_figures:
        return f"latency: {printable(lat.status or 'not traced') if lat else 'not traced'}\n"
    from iotop_plus.sampling.latency.hist import LATENCY_CSV_COLUMNS, csv_cells

    headers = ["Device", *LATENCY_CSV_COLUMNS]
    rows = [[printable(n), *(c or "-" for c in csv_cells(_device_latency(lat, n)))] for n in names]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = [
        " ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row))
        for row in [headers, *rows]
    ]
    return "\n".join(lines) + "\n"


def resolve_devices(
    requested: Sequence[str], sample: Sample, inventory: Inventory
) -> list[str] | None:
    """Map the user's device arguments to kernel names; None when none were given.

    Raises:
        UsageError: naming the device that does not exist.
    """
    if not requested:
        return None
    names = []
    for arg in requested:
        base = arg.removeprefix("/dev/")
        if base in sample.counters:
            names.append(base)
            continue
        dev = inventory.lookup(arg)
        if dev is None or dev.name not in sample.counters:
            known = printable(", ".join(sorted(sample.counters)[:12]))
            more = ", ..." if len(sample.counters) > 12 else ""
            shown = arg if len(arg) <= 80 else f"{arg[:60]}...({len(arg):,} characters)"
            raise UsageError(f"unknown device {shown!r} (known: {known}{more})")
        names.append(dev.name)
    return names


def _names(
    explicit: list[str] | None, cur: Sample, inventory: Inventory, args: argparse.Namespace
) -> list[str]:
    if explicit is not None:
        return [n for n in explicit if n in cur.counters]
    # The TUI's default selection: loop, ram and zram devices are hidden as well.
    names = select_devices(
        cur.counters,
        inventory,
        show_all=args.show_all,
        partitions=args.partitions,
        hide_virtual=True,
    )
    hidden = len(cur.counters) - len(names)
    if hidden and not getattr(args, "hidden_said", False):
        args.hidden_said = True  # once per run, not once per report
        print(
            f"iotop-plus: {hidden} device{'s' if hidden != 1 else ''} hidden "
            "(partitions, loop/ram/zram, never used; --all: show all, or name them)",
            file=sys.stderr,
        )
    return names


def disk_json(name: str, rates: DeviceRates | None, inventory: Inventory) -> dict[str, Any]:
    """One disk entry with iostat's own keys, plus ``in_flight`` and ``name``."""
    dev = inventory.get(name)
    entry: dict[str, Any] = {"disk_device": name}
    if rates is not None:
        for key, attr in IOSTAT_COLUMNS:
            entry[key] = round(getattr(rates, attr), 2)
        entry[_IN_FLIGHT.json_key] = rates.in_flight
    entry["name"] = dev.friendly_name if dev else name
    return entry


def render_table(
    cur: Sample,
    prev: Sample,
    names: Sequence[str],
    rates: Mapping[str, DeviceRates | None],
    inventory: Inventory,
    tz: tzinfo | None = None,
) -> str:
    """iostat -x style text for one interval."""
    elapsed = cur.monotonic - prev.monotonic
    headers = ["Device", *(_TABLE_HEADERS.get(k, k) for k, _ in IOSTAT_COLUMNS), _IN_FLIGHT.title]
    rows = []
    for name in names:
        r = rates.get(name)
        dev = inventory.get(name)
        label = printable(name if not dev or not dev.dm_name else f"{name}({dev.dm_name})")
        if r is None:
            rows.append([label, *(["-"] * len(IOSTAT_COLUMNS)), "-"])
        else:
            rows.append(
                [label, *(f"{getattr(r, a):.2f}" for _, a in IOSTAT_COLUMNS), str(r.in_flight)]
            )
    widths = [
        max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
        for i, h in enumerate(headers)
    ]
    lines = [f"\n{iso_time(cur.wall_time, tz)}  interval {elapsed:.3f} s"]
    lines.append(
        " ".join(
            h.ljust(widths[0]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(headers)
        )
    )
    for row in rows:
        lines.append(
            " ".join(
                c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)
            )
        )
    if not rows:
        lines.append("(no devices match; --all shows every device)")
    return "\n".join(lines) + "\n"


def iso_time(wall: float, tz: tzinfo | None = None) -> str:
    """ISO 8601 to the second, in ``tz`` (the recorded host's zone) or this host's zone."""
    at = datetime.fromtimestamp(wall, timezone.utc)
    return (at.astimezone(tz) if tz is not None else at.astimezone()).isoformat(timespec="seconds")
