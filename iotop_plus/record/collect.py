"""What the recorder takes from each live frame: header facts, the inventory with its queue
settings, top processes, pressure and events (device changes and the new lines of the settings
and probe journals, all from the frame)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iotop_plus import __version__
from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.format import VERSION
from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.limits import limits_doc
from iotop_plus.sampling.cgroups.names import task_cgroup
from iotop_plus.sampling.disks.queue_settings import QueueSettings, read_queue
from iotop_plus.sampling.disks.sampler import HostInfo, Platform
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.model import Frame, FrameEvent
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded


def zone() -> tuple[str, int]:
    """The host's zone name (``Europe/Paris``, else the abbreviation) and UTC offset in seconds."""
    offset = time.localtime().tm_gmtoff
    name = os.environ.get("TZ", "").lstrip(":")
    if not name:
        try:
            target = os.readlink("/etc/localtime")
            name = target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""
        except OSError:
            name = ""
    if not name:
        try:
            name = Path("/etc/timezone").read_text().strip()
        except OSError:
            name = ""
    return name or time.strftime("%Z"), int(offset)


def inventory_doc(
    inventory: Inventory,
    roots: Roots,
    nr_requests: Mapping[str, int],
    queues: Mapping[str, QueueSettings] | None = None,
) -> dict:
    """The inventory as a recording stores it, with each whole device's queue settings.

    ``queues`` are the frame's queue part; a device it lacks is read with the one reader.
    """
    devices = []
    queue: dict[str, dict[str, Any]] = {}
    for name, dev in inventory.devices.items():
        devices.append(dataclasses.asdict(dev))
        if dev.is_partition:
            continue
        facts: dict[str, Any] = {"nr_requests": nr_requests.get(name)}
        settings = queues.get(name) if queues is not None else None
        if settings is None:
            settings = read_queue(roots, name)
        if settings.scheduler is not None:
            facts["scheduler"] = settings.scheduler
        if "read_ahead_kb" in settings.values:
            facts["read_ahead_kb"] = settings.values["read_ahead_kb"]
        queue[name] = facts
    return {"inventory": devices, "queue": queue}


_FIELDS = {f.name for f in dataclasses.fields(BlockDevice)}
_TEXT_TUPLES = {"partitions", "slaves", "holders", "mounts", "fstypes"}
_INTS = {"major", "minor", "size_bytes", "logical_block_size", "physical_block_size"}
_BOOLS = {"rotational", "read_only", "swap"}
_REQUIRED_TEXT = {"name", "kind", "identity_source", "device_class"}


def _field_ok(key: str, value: Any) -> bool:
    """Whether a recorded inventory value has the type its ``BlockDevice`` field needs."""
    if key in _TEXT_TUPLES:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if key in _INTS:
        optional = key.endswith("_block_size")
        return (value is None and optional) or (type(value) is int and 0 <= value < 2**64)
    if key in _BOOLS:
        return isinstance(value, bool) or (value is None and key == "rotational")
    return isinstance(value, str) or (value is None and key not in _REQUIRED_TEXT)


def inventory_from_doc(doc: Mapping[str, Any]) -> tuple[Inventory, dict[str, int]]:
    """The :class:`Inventory` and ``nr_requests`` a recorded inventory document describes
    (rows or values of the wrong type, from a corrupt or hostile file, are left out)."""
    devices: dict[str, BlockDevice] = {}
    rows = doc.get("inventory") if isinstance(doc, Mapping) else None
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            continue
        kwargs: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in row.items()
            if k in _FIELDS and _field_ok(k, v)
        }
        try:
            dev = BlockDevice(**kwargs)
        except TypeError:
            continue
        devices[dev.name] = dev
    nr: dict[str, int] = {}
    queue = doc.get("queue") if isinstance(doc, Mapping) else None
    for name, facts in (queue if isinstance(queue, dict) else {}).items():
        if isinstance(facts, dict) and type(facts.get("nr_requests")) is int:
            nr[name] = facts["nr_requests"]
    return Inventory(devices), nr


def header_doc(
    host: HostInfo,
    interval: float,
    inventory: Mapping[str, Any],
    platform: Platform | None = None,
) -> dict[str, Any]:
    """The header of a new recording file.

    ``sysname``, ``machine`` and ``cpus`` (iostat's ``number-of-cpus``) are stored so that
    ``snapshot --from`` prints the same host facts as a live snapshot; older files lack them.
    """
    facts = platform or Platform()
    name, offset = zone()
    return {
        "format": "iotop-plus recording",
        "version": VERSION,
        "tool_version": __version__,
        "host": host.hostname,
        "kernel": host.kernel,
        "sysname": facts.sysname,
        "machine": facts.machine,
        "cpus": facts.cpus,
        "zone": name,
        "utc_offset_s": offset,
        "started_ns": time.time_ns(),
        "interval_s": interval,
        "pid": os.getpid(),
        **inventory,
    }


def _cgroup(roots: Roots, pid: int) -> str | None:
    """A task's cgroup read now (when its frame has none): the v2 path when the task is below
    the v2 root, else its v1 blkio path (on a hybrid host every task sits in the v2 root)."""
    try:
        text = read_bounded(
            roots.proc / str(pid) / "cgroup", MAX_ATTRIBUTE_BYTES, "surrogateescape"
        )
    except OSError:
        return None
    return task_cgroup(text)[0]  # the one rule (the Processes tab's and the issuers')


def top_processes(frame: Frame, roots: Roots, n: int) -> tuple[dict[str, Any], ...] | None:
    """The ``n`` processes that did the most disk I/O in the frame's interval."""
    part = frame.processes
    if part is None or n <= 0:
        return None
    ranked = []
    for rates in part.rates.values():
        if rates is None:
            continue
        total = (rates.read_bps or 0.0) + (rates.write_bps or 0.0)
        if total > 0:
            ranked.append((total, rates))
    ranked.sort(key=lambda t: -t[0])
    out = []
    for _, rates in ranked[:n]:
        task = rates.task
        io = task.io
        out.append(
            {
                "pid": task.pid,
                "comm": task.comm,
                "cgroup": part.cgroups.get(task.key) or _cgroup(roots, task.pid),
                "read_bytes": io.read_bytes if io else None,
                "write_bytes": io.disk_write_bytes if io else None,
                "delay_ticks": task.blkio_ticks,
                "read_bps": rates.read_bps,
                "write_bps": rates.write_bps,
            }
        )
    return tuple(out)


def recorded_event(event: FrameEvent) -> dict[str, Any]:
    """One frame event as a recording stores it: a device event with its kind and text, a
    journal event as its line unchanged under ``record`` with the journal it came from."""
    if event.record is not None and event.source is not None:
        return {"source": event.source, "record": dict(event.record)}
    return {"source": "device", "kind": event.kind, "text": event.text, "device": event.device}


def recorded_sample(
    frame: Frame, roots: Roots, n_processes: int, flags: frozenset[str] = frozenset()
) -> RecordedSample:
    """What the recorder stores of one live frame (its events in the order they came): every
    registered part in the frame under its letter (one with a record flag only when ``flags``
    holds it), and the cgroup limits (``L``) with the cgroups."""
    events = [recorded_event(e) for e in frame.events]
    pressure = frame.pressure.as_json() if frame.pressure is not None else None
    parts: dict[str, Any] = {}  # version 4's frame parts, by record type
    if frame.parts:
        for part in registry.parts():
            value = frame.parts.get(part.key)
            if value is None or part.letter is None:
                continue
            if part.record_flag is not None and part.record_flag not in flags:
                continue
            doc = part.record_json(value)
            if doc is not None:
                parts[part.letter] = doc
    if frame.cgroups is not None:  # the limits in force ({} none), with the cgroups
        parts["L"] = limits_doc(frame.cgroups.sample)
    return RecordedSample(
        frame.sample,
        top_processes(frame, roots, n_processes),
        pressure or None,
        tuple(events),
        parts,
    )
