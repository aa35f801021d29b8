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
    (``@sy_h[…] = count();``): the tracer keeps two copies of them
    (:mod:`iotop_plus.sampling.latency.generations`), and refuses a text that reads, deletes
    or clears one.
    """

    text: str
    maps: tuple[str, ...]
    parse: Callable[[Mapping[str, Mapping[str, object]]], object]
    merge: Callable[[object, object], object]


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
