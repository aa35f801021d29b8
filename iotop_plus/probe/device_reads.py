"""What a probe reads of its device and host around the fio run: the device's ``stat``
counters (fio's ``disk_util`` for a target fio sees only as /proc/self/fd/N), CPU pressure,
the device's class and whether it is rotational."""

from __future__ import annotations

import json
import time
from typing import Any

from iotop_plus.probe.target import ProbeTarget
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import (
    IO_TICKS,
    READ_MS,
    READS,
    READS_MERGED,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
    WRITES_MERGED,
    DiskCounters,
    counter_deltas,
    parse_sys_stat,
)
from iotop_plus.sampling.pressure import read_pressure_file
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded

DiskCountersAt = tuple[float, DiskCounters]
"""When (monotonic seconds) and what a device's ``stat`` said."""


def disk_counters(roots: Roots, target: ProbeTarget) -> DiskCountersAt | None:
    """A device target's ``stat`` counters now (fio finds no device behind /proc/self/fd/N)."""
    if target.kind != "device" or target.device is None:
        return None
    path = roots.sys_class_block / target.device / "stat"
    try:
        counters = parse_sys_stat(read_bounded(path, MAX_ATTRIBUTE_BYTES), target.device)
    except (OSError, ValueError):
        return None
    return time.monotonic(), counters


def with_disk_util(
    raw: str,
    doc: Any,
    target: ProbeTarget,
    before: DiskCountersAt | None,
    after: DiskCountersAt | None,
) -> tuple[str, Any]:
    """fio's document, with the ``disk_util`` fio would have given for a device by name.

    Computed the way fio does (``diskutil.c``): deltas of the device's ``stat`` and
    ``util`` = io_ticks over the elapsed time, with the wrap and reset rule of the rates (ms
    counters modulo 2^32; no ``disk_util`` when the counters were reset). The raw JSON is
    re-serialised with it.
    """
    if not isinstance(doc, dict) or doc.get("disk_util") or before is None or after is None:
        return raw, doc
    (t0, a), (t1, b) = before, after
    d = counter_deltas(a, b)
    if d is None:
        return raw, doc
    elapsed_ms = max((t1 - t0) * 1000, 1.0)
    util = {
        "name": target.device,
        "read_ios": d[READS],
        "write_ios": d[WRITES],
        "read_merges": d[READS_MERGED],
        "write_merges": d[WRITES_MERGED],
        "read_ticks": d[READ_MS],
        "write_ticks": d[WRITE_MS],
        "in_queue": d[TIME_IN_QUEUE],
        "util": min(100.0, d[IO_TICKS] * 100 / elapsed_ms),
    }
    doc = {**doc, "disk_util": [util]}
    return json.dumps(doc, indent=2), doc


def cpu_pressure(roots: Roots) -> tuple[float, int] | None:
    """(monotonic now, ``/proc/pressure/cpu`` some total µs), or None without PSI."""
    try:
        some = read_pressure_file(roots.proc / "pressure" / "cpu").some
    except (OSError, ValueError):
        return None
    return (time.monotonic(), some.total_us) if some is not None else None


def device_class_of(roots: Roots, device: str | None) -> str | None:
    """The measured device's class (``virtual``, ``loop``, ``nvme``...), or None."""
    if device is None:
        return None
    from iotop_plus.sampling.topology.inventory import read_inventory

    dev = read_inventory(roots, use_udev=False).get(device)
    return dev.media_class if dev is not None else None


def rotational_of(roots: Roots, device: str | None) -> bool | None:
    """Whether the measured device's queue says rotational, or None."""
    if device is None:
        return None
    from iotop_plus.devices.settings import queue_device

    path = roots.sys_block / queue_device(roots, device) / "queue" / "rotational"
    try:
        return path.read_text().strip() == "1"
    except OSError:
        return None
