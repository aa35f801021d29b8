"""A toy tracing frame part: ``getppid`` calls per pid, counted by the one tracer.

Its program counts ``tracepoint:syscalls:sys_enter_getppid`` per pid into ``@ty_n``; a test
drives it with a child that calls ``getppid`` a known number of times and finds that number
in the frame (through :class:`~iotop_plus.sampling.latency.part.LatencyPart`, or a
:class:`~iotop_plus.sampling.frame.model.LiveSource` that wants :data:`TOY_KEY`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.part import FramePart, PartReader, ReadContext, TraceProgram

TOY_KEY = "toy_getppid"
TOY_TEXT = "tracepoint:syscalls:sys_enter_getppid { @ty_n[pid] = count(); }"


def parse_counts(maps: Mapping[str, Mapping[str, object]]) -> Mapping[int, int]:
    """``@ty_n`` (``pid`` -> count) as ints; a key or value that is not one is refused."""
    out: dict[int, int] = {}
    for key, value in maps["@ty_n"].items():
        if not isinstance(value, int):
            raise ValueError(f"@ty_n[{key}] is not a count: {value!r}")
        out[int(key)] = value  # int() of a bad key raises ValueError
    return MappingProxyType(out)


def merge_counts(a: object, b: object) -> object:
    """Two ticks' counts added up."""
    assert isinstance(a, Mapping) and isinstance(b, Mapping)
    out = dict(a)
    for pid, n in b.items():
        out[pid] = out.get(pid, 0) + n
    return MappingProxyType(out)


def toy_program(parse: Any = parse_counts) -> TraceProgram:
    """The toy's probes (``parse`` replaceable: a test's parser that refuses)."""
    return TraceProgram(text=TOY_TEXT, maps=("@ty_n",), parse=parse, merge=merge_counts)


class ToyReader:
    """Hands on the traced counts; keeps the last context (tests read its tracer status)."""

    def __init__(self) -> None:
        self.last: ReadContext | None = None

    def read(self, ctx: ReadContext) -> tuple[Mapping[int, int] | None, tuple[Any, ...]]:
        self.last = ctx
        traced = ctx.traced
        return (traced if isinstance(traced, Mapping) else None), ()

    def close(self) -> None:
        pass


class ToyGetppidPart(FramePart[Mapping[int, int]]):
    """``getppid`` calls per pid since the previous frame (tests only)."""

    key = TOY_KEY

    def __init__(self) -> None:
        self.readers: list[ToyReader] = []

    def reader(self, roots: Roots) -> PartReader[Mapping[int, int]]:
        self.readers.append(ToyReader())
        return self.readers[-1]

    def trace(self, roots: Roots) -> TraceProgram | None:
        return toy_program()

    def to_json(self, value: Mapping[int, int]) -> Any:
        return {str(pid): n for pid, n in value.items()}

    def from_json(self, doc: Any) -> Mapping[int, int] | None:
        if not isinstance(doc, dict):
            return None
        try:
            return MappingProxyType({int(k): int(v) for k, v in doc.items()})
        except (TypeError, ValueError):
            return None


def call_getppid(times: int) -> int:
    """Run a child that calls ``getppid`` ``times`` times; returns its pid once it exited."""
    code = f"import os\nfor _ in range({int(times)}): os.getppid()\n"
    child = subprocess.Popen([sys.executable, "-S", "-c", code])
    child.wait(30)
    return child.pid
