"""``iotop-plus top --by cgroup``: per-cgroup I/O rates and pressure, headless.

The first sample only sets the baseline: ``--count N`` reports N measured intervals. Figures
include each cgroup's descendants (v2 counts them in; v1's are summed), so a slice's row is
its whole subtree. Cgroups that did no I/O are left out unless ``--all``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, TextIO

from iotop_plus import __version__
from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK
from iotop_plus.commands.json_stream import JsonStream
from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.files import not_counted_line
from iotop_plus.sampling.cgroups.limits import V1_WRITEBACK_NOTE, DeviceLimit, device_limits
from iotop_plus.sampling.cgroups.names import cgroup_name
from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupSample, IoRates
from iotop_plus.sampling.clock import frames_on_schedule
from iotop_plus.sampling.disks.sampler import read_host_info
from iotop_plus.sampling.frame.model import CGROUPS, CgroupFrame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.text import iotop_rate as human_rate
from iotop_plus.text import printable


def run(args: argparse.Namespace, roots: Roots, out: TextIO) -> int:
    """``top --by cgroup``; returns the exit code."""
    host = read_host_info(roots)
    source = live_source(roots, devices=False)
    source.want(CGROUPS, True)
    first = source.next_frame()
    assert first.cgroups is not None
    sample = first.cgroups.sample
    if sample.notice:
        print(f"iotop-plus: note: {printable(sample.notice)}", file=sys.stderr)
    if sample.version == "v1":  # v1 or hybrid: blkio is v1
        print(f"iotop-plus: note: {V1_WRITEBACK_NOTE}", file=sys.stderr)
    if sample.version is None:
        print("iotop-plus: error: no per-cgroup I/O figures on this host", file=sys.stderr)
        return EXIT_FAILURE
    stream: JsonStream | None = None
    if args.format == "json":
        doc = {
            "tool": "iotop-plus",
            "version": __version__,
            "host": host.hostname,
            "kernel": host.kernel,
            "interval_s": args.interval,
            "cgroup_version": sample.version,
            "cgroup_root": sample.root,
            "statistics": [],
        }
        stream = JsonStream(doc, out)
    warned: set[str] = set()
    try:
        for prev, cur in frames_on_schedule(source, args.interval, args.count, first=first):
            assert prev.cgroups is not None and cur.cgroups is not None
            for problem in cur.cgroups.sample.problems:
                if problem not in warned:
                    warned.add(problem)
                    print(f"iotop-plus: warning: {printable(problem)}", file=sys.stderr)
            if stream is not None:
                stream.add(interval_json(prev.cgroups.sample, cur.cgroups, args.show_all))
            else:
                out.write(render_table(prev.cgroups.sample, cur.cgroups, args.show_all, human_rate))
                out.flush()
    except KeyboardInterrupt:
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
        raise
    finally:
        source.close()
    if stream is not None:
        stream.close()
    return EXIT_OK


def busiest(
    rates: Mapping[str, CgroupRates | None], show_all: bool
) -> list[tuple[str, CgroupRates | None]]:
    """Cgroups to list, busiest first (read + write bytes/s, then IOPS, then path)."""
    rows = [
        (p, r)
        for p, r in rates.items()
        if show_all or (r is not None and (r.total.total_bps or r.total.discard_bps))
    ]

    def order(row: tuple[str, CgroupRates | None]) -> tuple[float, float, str]:
        r = row[1]
        if r is None:
            return (1.0, 0.0, row[0])
        return (-r.total.total_bps, -(r.total.read_iops + r.total.write_iops), row[0])

    rows.sort(key=order)
    return rows


def _figures(r: IoRates | None) -> dict[str, float | None]:
    def rnd(v: float | None) -> float | None:
        return None if v is None else round(v, 2)

    return {
        "read_bps": rnd(r.read_bps if r else None),
        "write_bps": rnd(r.write_bps if r else None),
        "read_iops": rnd(r.read_iops if r else None),
        "write_iops": rnd(r.write_iops if r else None),
        "discard_bps": rnd(r.discard_bps if r else None),
    }


def _with_limit(figures: dict[str, Any], limit: DeviceLimit | None) -> dict[str, Any]:
    """A device's figures plus ``limits`` (null: none in force) and ``throttled``."""
    figures["limits"] = limit.as_json() if limit is not None else None
    figures["throttled"] = limit is not None and limit.throttled
    return figures


def interval_json(prev: CgroupSample, cur: CgroupFrame, show_all: bool) -> dict[str, Any]:
    """One interval: ``cgroups[]`` with fixed keys, figures per device by name."""
    sample = cur.sample
    names = sample.device_names
    limits: dict[str, dict[str, DeviceLimit]] = {}
    for limit in device_limits(sample, cur.rates):
        limits.setdefault(limit.cgroup, {})[limit.devno] = limit
    rows = []
    for path, r in busiest(cur.rates, show_all):
        stat = sample.cgroups[path]
        pressure = stat.pressure
        some = pressure.some if pressure is not None else None
        full = pressure.full if pressure is not None else None
        row: dict[str, Any] = {"cgroup": path, "name": cgroup_name(path)}
        row.update(_figures(r.total if r else None))
        row["io_some_avg10"] = some.avg10 if some is not None else None
        row["io_full_avg10"] = full.avg10 if full is not None else None
        devices: list[tuple[str, IoRates | None]] = sorted(r.devices.items()) if r else []
        limited = limits.get(path, {})
        devices += [(dev, None) for dev in sorted(limited) if r is None or dev not in r.devices]
        row["devices"] = {
            names.get(dev, dev): _with_limit(_figures(dr), limited.get(dev)) for dev, dr in devices
        }
        for devno, why in sample.not_counted.items():  # v1: null, never 0
            figures = _with_limit(_figures(None), limited.get(devno))
            row["devices"][names.get(devno, devno)] = {**figures, "not_counted": why}
        if stat.limits is not None and stat.limits.any:
            row["limits"] = stat.limits.summary(names)
        rows.append(row)
    return {
        "timestamp": _iso(sample.wall_time),
        "elapsed_s": round(sample.monotonic - prev.monotonic, 6),
        "cgroups": rows,
    }


def render_table(prev: CgroupSample, cur: CgroupFrame, show_all: bool, human: Any) -> str:
    """iotop -b style text for one interval."""
    sample = cur.sample
    elapsed = sample.monotonic - prev.monotonic
    lines = [
        f"{_iso(sample.wall_time)}  interval {elapsed:.3f} s  cgroup {sample.version} "
        f"{printable(sample.root)}  {len(sample.cgroups)} cgroups"
    ]
    lines.append(
        f"{'READ':>11} {'WRITE':>11} {'R/s':>8} {'W/s':>8} {'DISCARD':>11} "
        f"{'SOME10':>6} {'FULL10':>6}  CGROUP"
    )
    rows = busiest(cur.rates, show_all)
    for path, r in rows:
        stat = sample.cgroups[path]
        p = stat.pressure
        some = f"{p.some.avg10:.2f}" if p is not None and p.some is not None else "-"
        full = f"{p.full.avg10:.2f}" if p is not None and p.full is not None else "-"
        if r is None:
            cells = ["-"] * 5
        else:
            t = r.total
            cells = [
                human(t.read_bps),
                human(t.write_bps),
                f"{t.read_iops:.1f}",
                f"{t.write_iops:.1f}",
                human(t.discard_bps),
            ]
        name = cgroup_name(path)
        label = path if name in (path, path.rsplit("/", 1)[-1]) else f"{path} ({name})"
        lines.append(
            f"{cells[0]:>11} {cells[1]:>11} {cells[2]:>8} {cells[3]:>8} {cells[4]:>11} "
            f"{some:>6} {full:>6}  {printable(label)}"
        )
    if not rows:
        lines.append("(no cgroup did I/O in this interval; --all lists every cgroup)")
    uncounted = not_counted_line(sample.not_counted, sample.device_names)
    if uncounted:
        lines.append(uncounted)
    for limit in device_limits(sample, cur.rates):  # at >= 90 % of a limit
        if limit.throttled:
            lines.append(f"throttled: {printable(limit.text())}")
    return "\n".join(lines) + "\n\n"


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).astimezone().isoformat(timespec="seconds")
