"""Turns the latency tracer's ``bpftrace -f json`` lines into :class:`TracerBatch`es."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.sampling.frame.part import TraceProgram
from iotop_plus.sampling.latency.generations import logical_name
from iotop_plus.sampling.latency.hist import (
    JOB_FLAG,
    Histogram,
    KernelJob,
    OpLatency,
    PidIO,
    bucket_index,
)
from iotop_plus.sampling.latency.program import DP_SHIFT, DP_UNIT_BITS, FLUSH_WRITE

_NONE: Mapping[str, object] = MappingProxyType({})


def op_of(rwbs: str) -> str | None:
    """The operation of a request from its ``rwbs`` flags (kernel ``blk_fill_rwbs``).

    A leading ``F`` is a preflush: ``FWS`` is a write, while ``F`` or ``FF`` alone is a flush.
    ``N`` (no data: zone ops, driver-private) is dropped.
    """
    if not rwbs:
        return None
    head = rwbs[0]
    if head == "F":
        if len(rwbs) > 1 and rwbs[1] in "RWD":
            head = rwbs[1]
        else:
            return "flush"
    return {"R": "read", "W": "write", "D": "discard"}.get(head)


def rwbs_of(field: str) -> str:
    """The ``rwbs`` flags of a map key field: the string itself, or the number the program
    made of its first two bytes (:func:`~iotop_plus.sampling.latency.program.rwbs_offsets`)."""
    if not field.isdigit():
        return field
    raw = int(field).to_bytes(2, sys.byteorder).split(b"\0", 1)[0]
    return raw.decode("ascii", "replace")


@dataclass
class _OpAcc:
    buckets: dict[int, int] = field(default_factory=dict)
    sum_ns: int = 0
    max_ns: int = 0
    queue_sum_ns: int = 0
    queue_count: int = 0

    def frozen(self) -> OpLatency:
        hist = Histogram(MappingProxyType(dict(self.buckets)), self.sum_ns, self.max_ns)
        return OpLatency(hist, self.queue_sum_ns, self.queue_count)


@dataclass(frozen=True)
class TracerBatch:
    """What the child counted over one tick."""

    end_ns: int
    """CLOCK_MONOTONIC ns when the tick's maps were printed (the end of what it covers)."""
    ops: Mapping[tuple[int, str], OpLatency]
    """Per (kernel dev_t, operation)."""
    issuers: Mapping[tuple[int, int, str], int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Requests submitted per (kernel dev_t, pid, comm): a probe's tracer only."""
    marked: bool = False
    """Printed for a frame's marker syscall (``mark``), not by the child's own tick."""
    errors: Mapping[tuple[int, int], int] = field(default_factory=lambda: MappingProxyType({}))
    """Failed requests per (kernel dev_t, negative errno) at ``block_rq_error``."""
    attributed: Mapping[tuple[int, int], PidIO] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Per (kernel dev_t, submitting pid): an attributing tracer's requests (pid 0: no
    submission seen)."""
    traced: Mapping[str, object] = field(default_factory=lambda: _NONE)
    """Each traced part's value for the tick (what its ``parse`` made of its maps), by key."""
    traced_problems: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Parts whose ``parse`` refused the tick's maps: why, one line, by key (no value)."""


_IDS_KEPT = 8192


@dataclass
class _PidAcc:
    ops: dict[str, _OpAcc] = field(default_factory=dict)
    sectors: dict[str, int] = field(default_factory=dict)

    def frozen(self, cgroup_id: int, comm: str, job: KernelJob | None = None) -> PidIO:
        ops = MappingProxyType({k: a.frozen() for k, a in self.ops.items()})
        return PidIO(comm, cgroup_id, ops, MappingProxyType(dict(self.sectors)), job)


_U64 = (1 << 64) - 1
"""bpftrace prints addresses in map keys as signed numbers: masked back to unsigned."""


class TracerParser:
    r"""Turns ``bpftrace -f json`` lines of :func:`tracer_program` into batches.

    Accepted lines: blank lines (bpftrace prints several), ``{"type": "attached_probes"}``,
    ``{"type": "map", "data": {"@name": {"k1,k2,...": value}}}``, ``{"type": "hist", ...}``
    (ignored), ``{"type": "printf", "data": "tick N\n"}`` or ``"mark N\n"`` (ends a batch, marked
    for a frame); anything else that
    is JSON is ignored, and a line that is not JSON raises ``ValueError`` quoting it. Keys:
    ``dev,rwbs,exp,sub`` (``@h``), ``dev,rwbs`` (``@ds``, ``@dm``, ``@qs``, ``@qn``),
    ``dev,exp,sub`` (``@fh``), ``dev`` (``@fs``, ``@fm``) and ``dev,pid,comm`` (``@who``;
    a comm may itself hold commas). An attributing program adds the pid as the last key of
    ``@h`` and ``@dm``, and prints ``@dp`` (``dev,rwbs,pid``: device time and sectors in one
    sum, see :data:`~iotop_plus.sampling.latency.program.DP_SHIFT`) where older ones printed
    ``@ds`` with the pid and ``@b`` (``dev,rwbs,pid``: sectors completed),
    ``@ic`` (``pid,cgroup,comm``: who submitted in the tick, or exited) and ``@kw``
    (``job,function,cgroup,queue``: each workqueue job that submitted, see
    :data:`~iotop_plus.sampling.latency.program.JOB_FLAG`), and ``queue ADDRESS NAME``
    printf lines name the queues. ``rwbs`` is the string or the number of its first two bytes
    (:func:`rwbs_of`).

    Every map comes as one of its two copies (``@h__0``, ``@h__1``) and is read under its own
    name (:func:`~iotop_plus.sampling.latency.generations.logical_name`).
    The maps of ``traced`` parts (by name, from each program's ``maps``) are kept as printed
    (``map`` and ``hist`` lines alike) and handed to that part's ``parse`` when the tick ends;
    a map that held nothing is not printed and comes as ``{}``, and one without keys (a plain
    number) as ``{"": n}``. A ``parse`` that raises ``ValueError`` costs its part that tick's
    value (:attr:`TracerBatch.traced_problems` says why), never the tracer; so does any other
    exception it raises (a part's bug).
    """

    def __init__(self, traced: Mapping[str, TraceProgram] | None = None) -> None:
        self._traced = dict(traced or {})
        self._owner = {m: key for key, program in self._traced.items() for m in program.maps}
        """Map name -> the key of the part that prints it."""
        self._printed: dict[str, dict[str, Mapping[str, object]]] = {}
        """This tick's maps of each traced part, by key then map name."""
        self.attached = False
        """True once bpftrace said its probes are attached."""
        self._acc: dict[tuple[int, str], _OpAcc] = {}
        self._who: dict[tuple[int, int, str], int] = {}
        self._errors: dict[tuple[int, int], int] = {}
        self._pids: dict[tuple[int, int], _PidAcc] = {}
        self._ids: dict[int, tuple[int, str]] = {}
        """pid -> (v2 cgroup id, comm) as last submitted (kept across ticks: a request
        submitted in one tick may complete in the next; forgotten past _IDS_KEPT pids)."""
        self._jobs: dict[int, tuple[int, int, int]] = {}
        """Job issuer -> (function, cgroup id, queue address), kept across ticks as ``_ids``."""
        self._queues: dict[int, str] = {}
        """Workqueue address -> its name (printed once per queue)."""

    def feed(self, line: str) -> TracerBatch | None:
        """Take one line; returns a batch when the line ended a tick."""
        text = line.strip()
        if not text:
            return None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"tracer printed something that is not JSON: {text[:120]!r}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"tracer printed unexpected JSON: {text[:120]!r}")
        kind = doc.get("type")
        data = doc.get("data")
        if kind == "attached_probes":
            self.attached = True
        elif kind == "map" and isinstance(data, dict):
            for printed, values in data.items():
                name = logical_name(printed)
                if isinstance(values, dict):
                    self._map(name, values)
                elif name in self._owner:
                    self._part_map(name, values)
        elif kind == "hist" and isinstance(data, dict) and self._owner:
            for printed, values in data.items():
                name = logical_name(printed)
                if name in self._owner:
                    self._part_map(name, values)
        elif kind == "printf" and isinstance(data, str):
            return self._printf(data)
        return None

    def _printf(self, data: str) -> TracerBatch | None:
        """A ``queue ADDRESS NAME`` line, or the ``tick``/``mark`` line that ends a batch."""
        if data.startswith("queue "):
            address, _, name = data[6:].rstrip("\n").partition(" ")
            if address.isdigit() and len(self._queues) < _IDS_KEPT:
                self._queues[int(address)] = name
            return None
        if not data.startswith(("tick ", "mark ")):
            return None
        try:
            end_ns = int(data.split()[1])
        except (IndexError, ValueError):
            raise ValueError(f"bad tick line from the tracer: {data[:80]!r}") from None
        acc, self._acc = self._acc, {}
        who, self._who = self._who, {}
        pids, self._pids = self._pids, {}
        ids = self._ids
        traced, problems = self._take_traced()
        return TracerBatch(
            end_ns,
            MappingProxyType({k: a.frozen() for k, a in acc.items()}),
            MappingProxyType(who),
            marked=data.startswith("mark "),
            errors=self._take_errors(),
            attributed=MappingProxyType(
                {k: a.frozen(*ids.get(k[1], (0, "")), self._job(k[1])) for k, a in pids.items()}
            ),
            traced=traced,
            traced_problems=problems,
        )

    def _job(self, issuer: int) -> KernelJob | None:
        """The job of a job issuer (None for a pid, or a job not named yet)."""
        if not issuer & JOB_FLAG:
            return None
        known = self._jobs.get(issuer)
        if known is None:
            return None
        function, cgroup_id, queue = known
        return KernelJob(function, cgroup_id, self._queues.get(queue, ""))

    def _part_map(self, name: str, values: object) -> None:
        """A traced part's map, kept as printed until the tick ends."""
        data = values if isinstance(values, dict) else {"": values}
        self._printed.setdefault(self._owner[name], {})[name] = MappingProxyType(data)

    def _take_traced(self) -> tuple[Mapping[str, object], Mapping[str, str]]:
        """Each traced part's value for the tick that ended, and why a part has none."""
        if not self._traced:
            return _NONE, MappingProxyType({})
        printed, self._printed = self._printed, {}
        values: dict[str, object] = {}
        problems: dict[str, str] = {}
        for key, program in self._traced.items():
            mine = printed.get(key, {})
            maps = MappingProxyType({m: mine.get(m, _NONE) for m in program.maps})
            try:
                values[key] = program.parse(maps)
            except ValueError as exc:  # output it does not understand
                problems[key] = f"{key}: tracer output not understood: {str(exc)[:120]}"
            except Exception as exc:  # a part's bug costs its value, never the tracer
                problems[key] = f"{key}: cannot read the tracer's output: {exc!r:.120}"
        return MappingProxyType(values), MappingProxyType(problems)

    def _map(self, name: str, values: Mapping[str, object]) -> None:
        if name == "@err":
            self._error_map(values)
            return
        if name in ("@who", "@fh", "@fs", "@fm"):
            self._probe_map(name, values)
            return
        if name in ("@ic", "@b", "@kw"):
            self._attribution_map(name, values)
            return
        if name == "@dp":
            self._packed_map(values)
            return
        if name not in ("@h", "@ds", "@dm", "@qs", "@qn"):
            if name in self._owner:
                self._part_map(name, values)
            return
        by_pid = 5 if name == "@h" else 3  # the key length when the last key is the pid
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            parts = key.split(",")
            try:
                dev = int(parts[0])
                op = op_of(rwbs_of(parts[1]))
                if op is None:
                    continue
                _add(self._acc.setdefault((dev, op), _OpAcc()), name, parts, value)
                if len(parts) == by_pid and name in ("@h", "@ds", "@dm"):
                    mine = self._pids.setdefault((dev, int(parts[-1])), _PidAcc())
                    _add(mine.ops.setdefault(op, _OpAcc()), name, parts, value)
            except (IndexError, ValueError):
                raise ValueError(f"bad {name} key from the tracer: {key[:80]!r}") from None

    def _attribution_map(self, name: str, values: Mapping[str, object]) -> None:
        """``@b`` (sectors by device, operation and pid), ``@ic`` (each submitting pid's
        cgroup and comm) and ``@kw`` (:meth:`_job_map`)."""
        if name == "@kw":
            self._job_map(values)
            return
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            try:
                if name == "@ic":
                    pid, cgroup, comm = key.split(",", 2)
                    if len(self._ids) >= _IDS_KEPT:
                        self._ids.clear()
                    self._ids[int(pid)] = (int(cgroup), comm)
                    continue
                dev, rwbs, pid = key.split(",")
                op = op_of(rwbs_of(rwbs))
                mine = self._pids.setdefault((int(dev), int(pid)), _PidAcc())
            except ValueError:
                raise ValueError(f"bad {name} key from the tracer: {key[:80]!r}") from None
            if op is not None:
                mine.sectors[op] = mine.sectors.get(op, 0) + value

    def _job_map(self, values: Mapping[str, object]) -> None:
        """``@kw`` (``job,function,cgroup,queue``): each worker's job seen in the tick."""
        for key in values:
            try:
                job, function, cgroup, queue = (int(k) & _U64 for k in key.split(","))
            except ValueError:
                raise ValueError(f"bad @kw key from the tracer: {key[:80]!r}") from None
            if len(self._jobs) >= _IDS_KEPT:
                self._jobs.clear()
            self._jobs[job] = (function, cgroup, queue)

    def _packed_map(self, values: Mapping[str, object]) -> None:
        """``@dp`` (``dev,rwbs,pid``): device time (in units of ``2**DP_UNIT_BITS`` ns) in the
        low :data:`DP_SHIFT` bits of each sum, sectors above them."""
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            try:
                dev, rwbs, pid = key.split(",")
                op = op_of(rwbs_of(rwbs))
                if op is None:
                    continue
                mine = self._pids.setdefault((int(dev), int(pid)), _PidAcc())
            except ValueError:
                raise ValueError(f"bad @dp key from the tracer: {key[:80]!r}") from None
            sum_ns = (value & ((1 << DP_SHIFT) - 1)) << DP_UNIT_BITS
            self._acc.setdefault((int(dev), op), _OpAcc()).sum_ns += sum_ns
            mine.ops.setdefault(op, _OpAcc()).sum_ns += sum_ns
            mine.sectors[op] = mine.sectors.get(op, 0) + (value >> DP_SHIFT)

    def _error_map(self, values: Mapping[str, object]) -> None:
        """``@err``: failed requests keyed ``dev,error`` (the negative errno)."""
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            try:
                dev, error = (int(part) for part in key.split(","))
            except ValueError:
                raise ValueError(f"bad @err key from the tracer: {key[:80]!r}") from None
            self._errors[(dev, error)] = self._errors.get((dev, error), 0) + value

    def _take_errors(self) -> Mapping[tuple[int, int], int]:
        errors, self._errors = self._errors, {}
        return MappingProxyType(errors)

    def _probe_map(self, name: str, values: Mapping[str, object]) -> None:
        """The maps of a probe's tracer: issuers and the flush+write timings."""
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            try:
                if name == "@who":
                    dev, pid, comm = key.split(",", 2)
                    who = (int(dev), int(pid), comm)
                    self._who[who] = self._who.get(who, 0) + value
                    continue
                parts = key.split(",")
                acc = self._acc.setdefault((int(parts[0]), FLUSH_WRITE), _OpAcc())
                if name == "@fh":
                    idx = bucket_index(int(parts[1]), int(parts[2]))
                    acc.buckets[idx] = acc.buckets.get(idx, 0) + value
                elif name == "@fs":
                    acc.sum_ns += value
                else:
                    acc.max_ns = max(acc.max_ns, value)
            except (IndexError, ValueError):
                raise ValueError(f"bad {name} key from the tracer: {key[:80]!r}") from None


def _add(acc: _OpAcc, name: str, parts: list[str], value: int) -> None:
    """One value of a device-time or queue map into ``acc``."""
    if name == "@h":
        idx = bucket_index(int(parts[2]), int(parts[3]))
        acc.buckets[idx] = acc.buckets.get(idx, 0) + value
    elif name == "@ds":
        acc.sum_ns += value
    elif name == "@dm":
        acc.max_ns = max(acc.max_ns, value)
    elif name == "@qs":
        acc.queue_sum_ns += value
    else:
        acc.queue_count += value
