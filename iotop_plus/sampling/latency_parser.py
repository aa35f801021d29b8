"""Turns the latency tracer's ``bpftrace -f json`` lines into :class:`TracerBatch`es."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.sampling.latency_hist import Histogram, OpLatency, bucket_index
from iotop_plus.sampling.latency_program import FLUSH_WRITE


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


class TracerParser:
    r"""Turns ``bpftrace -f json`` lines of :func:`tracer_program` into batches.

    Accepted lines: blank lines (bpftrace prints several), ``{"type": "attached_probes"}``,
    ``{"type": "map", "data": {"@name": {"k1,k2,...": value}}}``, ``{"type": "hist", ...}``
    (ignored), ``{"type": "printf", "data": "tick N\n"}`` or ``"mark N\n"`` (ends a batch, marked
    for a frame); anything else that
    is JSON is ignored, and a line that is not JSON raises ``ValueError`` quoting it. Keys:
    ``dev,rwbs,exp,sub`` (``@h``), ``dev,rwbs`` (``@ds``, ``@dm``, ``@qs``, ``@qn``),
    ``dev,exp,sub`` (``@fh``), ``dev`` (``@fs``, ``@fm``) and ``dev,pid,comm`` (``@who``;
    a comm may itself hold commas).
    """

    def __init__(self) -> None:
        self.attached = False
        """True once bpftrace said its probes are attached."""
        self._acc: dict[tuple[int, str], _OpAcc] = {}
        self._who: dict[tuple[int, int, str], int] = {}

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
            for name, values in data.items():
                if isinstance(values, dict):
                    self._map(name, values)
        elif kind == "printf" and isinstance(data, str) and data.startswith(("tick ", "mark ")):
            try:
                end_ns = int(data.split()[1])
            except (IndexError, ValueError):
                raise ValueError(f"bad tick line from the tracer: {data[:80]!r}") from None
            acc, self._acc = self._acc, {}
            who, self._who = self._who, {}
            return TracerBatch(
                end_ns,
                MappingProxyType({k: a.frozen() for k, a in acc.items()}),
                MappingProxyType(who),
                marked=data.startswith("mark "),
            )
        return None

    def _map(self, name: str, values: Mapping[str, object]) -> None:
        if name in ("@who", "@fh", "@fs", "@fm"):
            self._probe_map(name, values)
            return
        if name not in ("@h", "@ds", "@dm", "@qs", "@qn"):
            return
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            parts = key.split(",")
            try:
                dev = int(parts[0])
                op = op_of(parts[1])
                if op is None:
                    continue
                acc = self._acc.setdefault((dev, op), _OpAcc())
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
            except (IndexError, ValueError):
                raise ValueError(f"bad {name} key from the tracer: {key[:80]!r}") from None

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
