"""A frame's parts in the history ring: pickled one by one and compressed against a base frame's.

The parts of a frame made anew each frame (the top processes, the active cgroups, the issuers,
each device's health, the memory and pressure figures...) are kept as bytes:
each part pickled alone, the processes one task at a time, all compressed with a recent base
frame's as zlib's preset dictionary, and a part with the very bytes of the base's not stored
again. :mod:`~iotop_plus.sampling.store.packed` packs the rest of the frame.
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import json
import pickle
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.model import NO_PARTS, Frame, ProcessFrame
from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.processes.rates import TaskCounters, TaskKey, TaskRates, TaskTotals

PICKLED = ("processes", "cgroups", "latency", "pressure", "parts")
"""The frame's fields kept here (None, or no part values, in the ring's shell of the frame). As
objects they were five to ten times their pickles' size; the health part alone was ~3 KB a
frame at 60 devices. The registered parts' values (``parts``) are kept one by one
(:func:`_part_entries`)."""
_PICKLE = 0
"""A part value kept as its pickle."""
_JSON = 1
"""A part value that does not pickle, kept as its part's ``to_json`` (read with ``from_json``)."""


def _proxy(d: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(d)


def _reduce_proxy(m: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _proxy, (dict(m),)


_DISPATCH = copyreg.dispatch_table.copy()
_DISPATCH[MappingProxyType] = _reduce_proxy


def dumped(value: Any) -> bytes:
    """``value`` pickled alone, with a memo of its own.

    A pickle numbers the objects it has seen in order and refers back to them by number: in
    one pickle of all the parts, a new process among the top ones shifted every number after
    it, and the health part of 60 devices, the same every frame, no longer matched its base's
    bytes (docs/performance.md).
    """
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(value)
    return buf.getvalue()


_EMPTY: Mapping[Any, Any] = MappingProxyType({})
_RATE_FIELDS = tuple(f.name for f in dataclasses.fields(TaskRates) if f.name != "task")
_TOTAL_FIELDS = tuple(f.name for f in dataclasses.fields(TaskTotals) if f.name != "task")


def _in_order(part: Mapping[TaskKey, Any], tasks: Mapping[TaskKey, Any]) -> bool:
    return type(part) in (dict, MappingProxyType) and list(part) == [k for k in tasks if k in part]


def _task_records(procs: ProcessFrame) -> tuple[bytes, ...] | None:
    """``procs`` as its shell (no tasks, rates, totals, cgroups) pickled, then one pickle per
    task; None when its mappings are not the ring's (the part is then pickled whole).

    A task's record is (key, counters, rate, totals, cgroup): the rate's and totals' fields
    without their task (the same counters), ``()`` for a None rate, None where the task has
    no rate, totals or cgroup. A task that did not change costs a match against the base
    frame's record, and a new one its own record only.
    """
    tasks, rates, totals = procs.sample.tasks, procs.rates, procs.totals
    cgroups = procs.cgroups
    if not all(_in_order(part, tasks) for part in (tasks, rates, totals, cgroups)):
        return None
    shell = dataclasses.replace(
        procs,
        sample=dataclasses.replace(procs.sample, tasks=_EMPTY),
        rates=_EMPTY,
        totals=_EMPTY,
        cgroups=_EMPTY,
    )
    records = [dumped(shell)]
    for key, task in tasks.items():
        rate: tuple[Any, ...] | None = None
        if key in rates:
            r = rates[key]
            if r is not None and r.task != task:
                return None
            rate = () if r is None else tuple(getattr(r, name) for name in _RATE_FIELDS)
        total: tuple[Any, ...] | None = None
        if key in totals:
            t = totals[key]
            if t.task != task:
                return None
            total = tuple(getattr(t, name) for name in _TOTAL_FIELDS)
        records.append(dumped((key, task, rate, total, cgroups.get(key))))
    return tuple(records)


def _processes_from(records: tuple[bytes, ...]) -> ProcessFrame:
    """The process part again from :func:`_task_records`' pickles."""
    shell: ProcessFrame = pickle.loads(records[0])
    tasks: dict[TaskKey, TaskCounters] = {}
    rates: dict[TaskKey, TaskRates | None] = {}
    totals: dict[TaskKey, TaskTotals] = {}
    cgroups: dict[TaskKey, str] = {}
    for record in records[1:]:
        key, task, rate, total, cgroup = pickle.loads(record)
        tasks[key] = task
        if rate is not None:
            rates[key] = TaskRates(task, *rate) if rate else None
        if total is not None:
            totals[key] = TaskTotals(task, *total)
        if cgroup is not None:
            cgroups[key] = cgroup
    return dataclasses.replace(
        shell,
        sample=dataclasses.replace(shell.sample, tasks=MappingProxyType(tasks)),
        rates=MappingProxyType(rates),
        totals=MappingProxyType(totals),
        cgroups=MappingProxyType(cgroups),
    )


class HealthPickle:
    """The last health part pickled, and what it was made of, to pickle it again only when that
    changed. A device's reading is the same object from frame to frame until it is read again
    (every few minutes), and the ages are left out (:func:`_packable`), so the part is mostly
    the very same, and pickling it each frame would be a large share of the ring's append
    (docs/performance.md)."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[object, bytes]] = {}
        """Each other part's last value and its pickle, by key: a value that is the very
        object of the frame before (the queue settings until they are re-read) is not
        pickled again."""
        self._made_of: tuple[Any, ...] | None = None
        self._readings: tuple[Any, ...] = ()
        self._bytes = b""

    def dumped(self, health: HealthFrame) -> bytes:
        """``health`` pickled (with no ages), as :func:`dumped` would."""
        readings = health.readings
        made_of = (
            tuple(readings),
            health.age_s,
            health.io_errors,
            health.io_error_source,
            health.problem,
            health.new_errors,
            health.grown,
        )
        same = self._made_of == made_of and all(
            # The same names (in made_of), so as many readings; held here, so no id is reused.
            a is b
            for a, b in zip(self._readings, readings.values(), strict=True)
        )
        if not same:
            self._bytes = dumped(health)
            self._made_of, self._readings = made_of, tuple(readings.values())
        return self._bytes


def _part_entries(frame: Frame, health: HealthPickle | None) -> tuple[Any, ...]:
    """The registered parts' values of ``frame``, each ``(key, how, bytes)``: pickled alone
    (a health part without its ages, through ``health``), else through its part's
    ``to_json`` (a value that does not pickle)."""
    out = []
    for key, value in frame.parts.items():
        packable = _without_ages(value, frame.monotonic)
        if health is not None and type(packable) is HealthFrame:
            out.append((key, _PICKLE, health.dumped(packable)))
            continue
        seen = health.last.get(key) if health is not None else None
        if seen is not None and seen[0] is value:
            out.append((key, _PICKLE, seen[1]))
            continue
        try:
            raw = dumped(packable)
            if health is not None:
                health.last[key] = (value, raw)
            out.append((key, _PICKLE, raw))
        except (pickle.PicklingError, TypeError, AttributeError):
            part = registry.part(key)
            if part is None:
                raise
            out.append((key, _JSON, json.dumps(part.to_json(value)).encode()))
    return tuple(out)


def part_values(entries: tuple[Any, ...], monotonic: float) -> Mapping[str, object]:
    """The values :func:`_part_entries` kept, by key, as of the frame's ``monotonic`` time."""
    if not entries:
        return NO_PARTS
    out: dict[str, object] = {}
    for key, how, raw in entries:
        if how == _PICKLE:
            out[key] = with_ages(pickle.loads(raw), monotonic)
        else:
            part = registry.part(key)
            value = part.from_json(json.loads(raw)) if part is not None else None
            if value is not None:
                out[key] = value
    return MappingProxyType(out)


def pickled(frame: Frame, health: HealthPickle | None = None) -> tuple[bytes, ...] | None:
    """Each of ``frame``'s parts pickled alone (the processes task by task), or None;
    ``health`` keeps the health part's last pickle, for a packer that packs frame after
    frame."""
    out: list[bytes] = []
    try:
        for name in PICKLED:
            if name == "parts":
                out.append(dumped(_part_entries(frame, health)))
                continue
            value = getattr(frame, name)
            if name == "processes" and value is not None:
                value = _task_records(value) or value
            out.append(dumped(value))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None  # something that does not pickle: the parts stay as they are
    return tuple(out)


def _unpickled(parts: tuple[bytes, ...]) -> list[Any]:
    values = [pickle.loads(part) for part in parts]
    processes = PICKLED.index("processes")
    if isinstance(values[processes], tuple):
        values[processes] = _processes_from(values[processes])
    return values


# Consecutive frames' parts are mostly the same bytes (the same top processes with their
# command lines, every device's health reading, the cgroup paths): each frame's are
# compressed with the pickled parts of a recent "base" frame as zlib's preset dictionary, so
# only what differs costs (docs/performance.md), and a
# part whose bytes are the base's is not stored again (:data:`SAME`).
_BASES: dict[int, tuple[bytes, bytes, tuple[bytes, ...]]] = {}
"""Compressed base parts (by id) -> their bytes and each part's, for a few bases lately
unpacked."""

LEVEL = 2
"""zlib's level for the parts and the counters of the history ring: a higher level keeps the
ring a little smaller and costs much more of the frame's time at scale
(``benchmarks/bench_frame_cost.py``, docs/performance.md)."""

SAME = b""
"""A part stored as this has the very bytes of the base frame's (a pickle is never empty)."""


def compressed(raw: bytes, base: bytes | None) -> bytes:
    """``raw`` compressed, with ``base`` as the preset dictionary if given."""
    if base is None:
        return zlib.compress(raw, LEVEL)
    comp = zlib.compressobj(LEVEL, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, zdict=base)
    return comp.compress(raw) + comp.flush()


def _base_raw(base: bytes) -> tuple[bytes, tuple[bytes, ...]]:
    hit = _BASES.get(id(base))
    if hit is not None and hit[0] is base:
        return hit[1], hit[2]
    raw = zlib.decompress(base)
    parts = pickle.loads(raw)
    if len(_BASES) >= 8:
        _BASES.pop(next(iter(_BASES)))
    _BASES[id(base)] = (base, raw, parts)
    return raw, parts


def _ages(health: HealthFrame, monotonic: float) -> dict[str, float]:
    """Each reading's age at ``monotonic``, as the live health part works it out."""
    return {n: max(0.0, monotonic - r.read_monotonic) for n, r in health.readings.items()}


def _without_ages(value: Any, monotonic: float) -> Any:
    """A part value as pickled: a live health part without its ages, which are rebuilt from
    the readings and the frame's time (they were a third of the pickled parts at 60 devices,
    and the only thing in health that moves every frame)."""
    if type(value) is HealthFrame and value.age_s == _ages(value, monotonic):
        no_ages: dict[str, Any] = {"age_s": None}
        return dataclasses.replace(value, **no_ages)
    return value


def with_ages(health: Any, monotonic: float) -> Any:
    """A health part packed without its ages with them again, as at ``monotonic``."""
    if isinstance(health, HealthFrame) and health.age_s is None:
        return dataclasses.replace(health, age_s=MappingProxyType(_ages(health, monotonic)))
    return health


def parts_of(parts: bytes, base: bytes | None) -> list[Any]:
    """The values packed into ``parts`` (compressed against ``base``'s, if given): those of
    :data:`PICKLED` (the registered parts' still as entries, for :func:`part_values`), then
    the shell's changes."""
    if base is None:
        return _unpickled(pickle.loads(zlib.decompress(parts)))
    base_raw, base_parts = _base_raw(base)
    comp = zlib.decompressobj(15, zdict=base_raw)
    stored = pickle.loads(comp.decompress(parts) + comp.flush())
    return _unpickled(
        tuple(b if b != SAME else base for b, base in zip(stored, base_parts, strict=True))
    )
