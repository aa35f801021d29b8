"""What a frame part is: one module that reads one fact, and one line in :mod:`.registry`.

A part declares everything the rest of the tool needs to carry its fact, so that no consumer
names it by hand:

- how it reads: :meth:`FramePart.reader` makes the per-source reader, whose
  :meth:`PartReader.read` gets the frame's sample, inventory and the parts read before it
  (:class:`ReadContext`) and returns the part's value and the events it saw;
- when it is read: every frame (``always``, cheap facts), or only while some consumer wants
  its ``key``;
- how it is stored: its record type letter (``letter``) and its JSON (``to_json`` and
  ``from_json``, the same document in recordings, the live ring and ``snapshot``);
- where it shows in ``snapshot`` JSON (``disk_json`` per device, ``entry_json`` per
  statistics entry) and what it exports (``metrics``, plain tuples the exporter turns into
  families, so this layer imports no exporter);
- for a part that traces, the probe text and map parser it adds to its consumer's one
  bpftrace program (:class:`TraceProgram`).

The frame keeps part values in a mapping by key, read with ``frame.get(SomePart)``, so the
frame's model imports no part.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.disks.sampler import Sample
    from iotop_plus.sampling.topology.inventory import Inventory

V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


@dataclass(frozen=True)
class ReadContext:
    """What a part's reader is given for one frame."""

    roots: Roots
    """Where /proc and /sys are."""
    sample: Sample
    """This frame's disk counters (names, dev_t, identities)."""
    previous: Sample | None
    """The previous frame's counters; None on the first frame."""
    inventory: Inventory
    """The device inventory (partitions, holders, mounts)."""
    wanted: frozenset[str]
    """The part keys some consumer wants now."""
    values: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """Values of the parts read before this one this frame, by key (see ``after``)."""
    events: tuple[object, ...] = ()
    """The frame's events so far (device, journal and earlier parts' events)."""
    traced: object | None = None
    """This part's share of the tracer's output since the previous frame (what its
    :attr:`TraceProgram.parse` returned, merged over the ticks); None while not tracing."""
    tracer_status: str | None = None
    """Why the tracer is not tracing (one line), when the part traces and it is not."""
    latency: object | None = None
    """The frame's latency part (a :class:`~iotop_plus.sampling.latency.hist.LatencyFrame`)
    while the latency tracer runs; None otherwise."""


@dataclass(frozen=True)
class Metric:
    """One sample for the exporter: ``kind`` is ``gauge``, ``counter`` or ``histogram``."""

    name: str
    """The full metric name (``iotop_plus_disk_sync_duration_seconds``)."""
    kind: str
    help: str
    labels: Mapping[str, str]
    value: float | Mapping[str, float]
    """A number; for a histogram, cumulative counts by upper bound (``"+Inf"`` included) and
    ``"sum"``."""


@dataclass(frozen=True)
class TraceProgram:
    """The probes a tracing part adds to its consumer's one bpftrace program.

    ``text`` holds whole probe blocks (``tracepoint:…{ … }``) whose maps are named with the
    part's own prefix (``@sy_…``), so parts never share a map. The tracer prints and clears
    ``maps`` at every tick; ``parse`` turns one tick's maps (bpftrace's JSON ``data`` for each
    name, as printed) into the part's traced value, and ``merge`` adds two ticks' values (the
    frame gets the sum of the ticks since the previous frame).

    The printed maps are only ever written, each write a statement of its own
    (``@sy_h[…] = count();``): the tracer runs the text through :func:`buffered_text`, which
    keeps two generations of them (see there). A printed map that the text reads, deletes or
    clears is refused there.
    """

    text: str
    maps: tuple[str, ...]
    parse: Callable[[Mapping[str, Mapping[str, object]]], object]
    merge: Callable[[object, object], object]


GENERATION = "@tg"
"""The tracer's generation flag (0 or 1): which copy of the parts' printed maps is open."""
_GENERATIONS = ("__0", "__1")
"""Suffixes of a printed map's two copies."""


def buffered_text(program: TraceProgram) -> str:
    """``program.text`` with every run of writes to its printed maps split by generation:
    ``if (@tg) { …__1 } else { …__0 }``.

    bpftrace's ``print`` and ``clear`` run in its own process, one after the other, a while
    after the probe that asked for them (longer on a busy host): a write to a printed map
    between the two is cleared unseen. So the probes write one copy while the tick prints
    and clears the other (:func:`flush_lines` flips the flag first): a write is lost only if
    bpftrace has not cleared a copy by the time the flag flips back to it, a whole tick
    later (or at a frame's mark just after a tick). Raises ``ValueError`` when the text uses
    a printed map other than by writing it."""
    if not program.maps:
        return program.text
    names = "|".join(re.escape(m) for m in program.maps)
    write = rf"(?:{names})(?:\[|\s*=)[^;{{}}]*;"
    writes = re.compile(rf"(?:(?<=[{{;])|^)(\s*)({write}(?:\s*{write})*)", re.MULTILINE)

    def split(match: re.Match[str]) -> str:
        run = " ".join(line.strip() for line in match.group(2).splitlines())
        copies = [_renamed(run, program.maps, suffix) for suffix in _GENERATIONS]
        return f"{match.group(1)}if ({GENERATION}) {{ {copies[1]} }} else {{ {copies[0]} }}"

    text = writes.sub(split, program.text)
    left = re.search(rf"(?:{names})(?![\w])", text)
    if left is not None:
        line = text[: left.start()].count("\n") + 1
        raise ValueError(f"{left.group(0)} is used other than written (line {line} of its text)")
    return text


def _renamed(text: str, maps: Iterable[str], suffix: str) -> str:
    for name in maps:
        text = re.sub(rf"{re.escape(name)}(?![\w])", name + suffix, text)
    return text


def flush_lines(programs: Iterable[TraceProgram]) -> list[str]:
    """The statements a tick or mark runs for the parts' printed maps: flip the generation
    flag, then print and clear the copy the probes stopped writing (empty when no part
    prints a map)."""
    maps = [m for program in programs for m in program.maps]
    if not maps:
        return []

    def flush(suffix: str) -> str:
        return " ".join(f"print({m}{suffix}); clear({m}{suffix});" for m in maps)

    return [
        f"  {GENERATION} = 1 - {GENERATION};",
        f"  if ({GENERATION}) {{ {flush(_GENERATIONS[0])} }}",
        f"  else {{ {flush(_GENERATIONS[1])} }}",
    ]


def printed_names(program: TraceProgram) -> dict[str, str]:
    """The names the tracer prints a part's maps under, to the part's names."""
    return {m + suffix: m for m in program.maps for suffix in _GENERATIONS}


class PartReader(Protocol[V_co]):
    """One source's reader of a part (made when the part is first wanted)."""

    def read(self, ctx: ReadContext) -> tuple[V_co | None, tuple[Any, ...]]:
        """The part's value for this frame and the events it saw (``FrameEvent``s)."""
        ...

    def close(self) -> None:
        """Release files, threads and children."""
        ...


class FramePart(Generic[V]):
    """A fact a frame carries. Subclass it, set the class attributes, register it."""

    key: ClassVar[str]
    """The part's name: ``want(key)``, the snapshot JSON key and the exporter's words."""
    letter: ClassVar[str | None] = None
    """Its record type letter; None: not recorded."""
    record_flag: ClassVar[str | None] = None
    """The ``record`` option that turns recording it on (``--sync``); None: recorded
    whenever it is in the frame."""
    always: ClassVar[bool] = False
    """Read on every frame that reads devices; else only while some consumer wants ``key``."""
    after: ClassVar[tuple[str, ...]] = ()
    """Keys of parts whose values :attr:`ReadContext.values` must hold (read first)."""
    wants: ClassVar[tuple[str, ...]] = ()
    """What the frame must also read while this part is wanted (``LiveSource.want`` keys:
    ``latency`` runs the latency tracer whose histograms :attr:`ReadContext.latency` holds)."""
    live_only: ClassVar[bool] = False
    """Read on the live host only (a captured tree has no such state to read)."""

    def reader(self, roots: Roots) -> PartReader[V]:
        """A new reader for one source."""
        raise NotImplementedError

    def trace(self, roots: Roots) -> TraceProgram | None:  # noqa: ARG002
        """The probes this part adds to the tracer while wanted; None: it does not trace."""
        return None

    def to_json(self, value: V) -> Any:
        """The value as JSON (recordings, the live ring); must round-trip through
        :meth:`from_json`."""
        raise NotImplementedError

    def from_json(self, doc: Any) -> V | None:
        """The value a recorded document describes; None for a document it cannot read
        (files are untrusted: never raise on their content)."""
        raise NotImplementedError

    def record_json(self, value: V) -> Any:
        """What the recorder writes under :attr:`letter` for this frame; None: nothing this
        frame (a part that writes only while its figures are exact, or only on change)."""
        return self.to_json(value)

    def disk_json(self, value: V, device: str) -> Mapping[str, Any]:  # noqa: ARG002
        """Keys this part adds to ``snapshot``'s entry for ``device`` (``{}``: none)."""
        return {}

    def entry_json(self, value: V) -> Mapping[str, Any]:  # noqa: ARG002
        """Keys this part adds to each ``snapshot`` statistics entry (``{}``: none)."""
        return {}

    def metrics(self, value: V) -> Iterable[Metric]:  # noqa: ARG002
        """What ``serve`` exports of the value."""
        return ()


class TracedParts:
    """The probes the wanted parts add to the tracer: each part's
    :meth:`~iotop_plus.sampling.frame.part.FramePart.trace` is asked once per source."""

    def __init__(self, roots: Roots) -> None:
        self._roots = roots
        self._asked: dict[str, TraceProgram | None] = {}

    def wanted(self, parts: Iterable[FramePart[Any]], wanted: Set[str]) -> dict[str, TraceProgram]:
        """The programs of the ``parts`` some consumer wants (by key) that trace. A part
        is traced only while wanted, even one read on every frame (tracing needs root)."""
        out: dict[str, TraceProgram] = {}
        for part in parts:
            key = part.key
            if key not in wanted:
                continue
            if key not in self._asked:
                self._asked[key] = part.trace(self._roots)
            program = self._asked[key]
            if program is not None:
                out[key] = program
        return out
