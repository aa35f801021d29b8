"""One frozen :class:`Frame` per instant, from a :class:`FrameSource`: the frame's model.

Every view (the TUI's table, charts, marks and panels; the recorder, ``serve`` and the
headless commands) reads frames and nothing else, so what works live works the same on a
recording or a fixture tree. The model imports no reader and no frame part: a part's value
sits in :attr:`Frame.parts` under the part's key, read with ``frame.get(SomePart)``
(:mod:`.part`, :mod:`.registry`). The live assembly is :mod:`.live_source`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupSample
    from iotop_plus.sampling.disks.rates import DeviceRates
    from iotop_plus.sampling.disks.sampler import HostInfo, Sample
    from iotop_plus.sampling.frame.part import FramePart
    from iotop_plus.sampling.latency.hist import LatencyFrame
    from iotop_plus.sampling.pressure import Pressure
    from iotop_plus.sampling.processes.rates import (
        ProcessSample,
        TaskKey,
        TaskRates,
        TaskTotals,
    )
    from iotop_plus.sampling.topology.blockdev import OpenBlockFile
    from iotop_plus.sampling.topology.inventory import Inventory

V = TypeVar("V")

NO_PARTS: Mapping[str, object] = MappingProxyType({})
"""A frame without part values (one object, shared by every such frame)."""
PROCESSES = "processes"
"""What :meth:`LiveSource.want` takes for the per-process view (iotop)."""
LATENCY = "latency"
"""What :meth:`LiveSource.want` takes for per-device latency histograms (the bpftrace tracer)."""
LATENCY_QUEUE = "latency-queue"
"""Latency plus the queue split (insert to issue): the tracer attaches ``block_rq_insert`` too."""
CGROUPS = "cgroups"
"""What :meth:`LiveSource.want` takes for per-cgroup I/O (the cgroups view, ``top --by cgroup``)."""
THROTTLES = "throttles"
"""The throttle watch's part key (its limited cgroups also name whom a throttle's delayed
dispatch is for, in the issuers)."""
BUILT_IN = (PROCESSES, LATENCY, LATENCY_QUEUE, CGROUPS)
"""What :meth:`FrameSource.want` takes besides the registered parts' keys: the facts the frame
holds in fields of its own."""

MARKED_KINDS = frozenset({"writeback", "io-error"})
"""Event kinds always drawn as chart marks (dirty crossed the background threshold; failed
I/O)."""
JOURNAL_KINDS = frozenset({"setting", "probe"})
"""Event kinds of journal lines, drawn when their line is one of :data:`MARKED_RECORDS`."""
MARKED_RECORDS = frozenset({"change", "probe-result", "experiment"})
"""Journal lines drawn as chart marks (an applied write, a probe's or an experiment's result;
an intent or keep line is recorded, not drawn)."""


@dataclass(frozen=True)
class FrameEvent:
    """Something that happened between two frames: a device came or went, a setting changed,
    a probe finished."""

    kind: str
    """``device-added``, ``device-removed``, ``setting``, ``probe``, ``io-error``,
    ``writeback`` (dirty memory crossed the background threshold)."""
    text: str
    """One line for people."""
    device: str | None = None
    """The device it concerns, if one."""
    record: Mapping[str, Any] | None = None
    """The journal or probe line, unchanged (``setting`` and ``probe`` events)."""
    source: str | None = None
    """Where a journal event came from: ``changes`` or ``probes`` (the recorded name)."""
    wall_time: float | None = None
    """When it happened (seconds since the epoch); None: at its frame's time."""
    monotonic: float | None = None
    """The same instant on the monotonic clock (for marks against the samples); None: at its
    frame's time."""

    @property
    def marked(self) -> bool:
        """Whether the charts draw it as a mark (applied setting changes, probe results)."""
        return is_marked(self.kind, self.record)


def is_marked(kind: str, record: Mapping[str, Any] | None) -> bool:
    """Whether an event of ``kind`` with this journal line is drawn as a chart mark."""
    if kind in MARKED_KINDS:
        return True
    if kind not in JOURNAL_KINDS:
        return False
    return record is None or record.get("record") in MARKED_RECORDS


@dataclass(frozen=True)
class ProcessFrame:
    """The per-process part of a frame (present only while someone wants processes)."""

    sample: ProcessSample
    """Raw per-task counters."""
    rates: Mapping[TaskKey, TaskRates | None]
    """Per-task rates over the interval; empty on the first process sample."""
    totals: Mapping[TaskKey, TaskTotals]
    """Bytes per task since processes were first wanted."""
    detail_rates: Mapping[TaskKey, TaskRates | None]
    """Per-thread rates of the process being detailed (``LiveSource.detail_pid``)."""
    open_files: tuple[OpenBlockFile, ...] = ()
    """Block-device files the detailed process holds open."""
    cgroups: Mapping[TaskKey, str] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """The cgroup path of each task (read once per task), where known."""


@dataclass(frozen=True)
class CgroupFrame:
    """The per-cgroup part of a frame (present only while someone wants cgroups)."""

    sample: CgroupSample
    """Raw counters, pressure and limits of every cgroup."""
    rates: Mapping[str, CgroupRates | None]
    """Rates per cgroup path; None on the first sample and for new cgroups."""
    members: tuple[tuple[int, str], ...] = ()
    """(pid, name) of the processes in ``LiveSource.detail_cgroup``."""
    members_of: str | None = None
    """The cgroup ``members`` lists."""


@dataclass(frozen=True)
class Frame:
    """Everything the views show for one instant; immutable, so any view can keep it."""

    sample: Sample
    """Raw counters of every block device."""
    rates: Mapping[str, DeviceRates | None]
    """iostat -x rates over the measured interval; None for new or reset devices."""
    inventory: Inventory
    """The device inventory (the same object until the set of devices changes)."""
    inventory_changed: bool
    """True on the first frame and whenever devices appeared or vanished."""
    nr_requests: Mapping[str, int]
    """``queue/nr_requests`` per whole device (for the aqu-sz warning)."""
    elapsed_s: float | None
    """The measured interval the rates cover; None on the first frame."""
    ever_used: frozenset[str]
    """Devices that have done any I/O since boot (iostat's default selection)."""
    seq: int = 0
    """Frames from this source so far, 1-based; 0 for a hand-made frame."""
    short_interval: bool = False
    """The rates cover the deliberately short first interval (figures sooner, noisier)."""
    processes: ProcessFrame | None = None
    """Per-process I/O, when wanted; None otherwise."""
    process_error: str | None = None
    """Why processes were wanted but could not be read (one line)."""
    events: tuple[FrameEvent, ...] = ()
    """What happened since the previous frame."""
    pressure: Pressure | None = None
    """Host-wide PSI (io, memory, cpu) read with the disks; None when not read at all."""
    latency: LatencyFrame | None = None
    """Per-device latency histograms since the previous frame, and the tracer's state and
    one-line status, while :data:`LATENCY` is wanted; None otherwise."""
    cgroups: CgroupFrame | None = None
    """Per-cgroup I/O, when wanted; None otherwise."""
    parts: Mapping[str, object] = dataclasses.field(default_factory=lambda: NO_PARTS)
    """The registered frame parts' values by key (:mod:`.registry`); read with :meth:`get`."""
    problems: tuple[str, ...] = ()
    """Why a part could not be read for this frame (one line each; its value is absent)."""
    verdicts: Mapping[str, object] | None = dataclasses.field(default=None, compare=False)
    """Derived, never recorded: the verdict (a :class:`~.diagnosis.Diagnosis`) of the devices
    judged so far, by name, each with the frames before it (:mod:`.verdicts`); None: none."""

    def get(self, part: type[FramePart[V]] | FramePart[V]) -> V | None:
        """The value of ``part`` in this frame; None when it was not read."""
        value = self.parts.get(part.key)
        return value  # type: ignore[return-value]  # the registry keeps one part per key

    @property
    def wall_time(self) -> float:
        """Wall-clock time of the frame, for the header and JSON."""
        return self.sample.wall_time

    @property
    def monotonic(self) -> float:
        """Monotonic time of the frame; differences are intervals."""
        return self.sample.monotonic


class FrameSource(Protocol):
    """Where frames come from: the live host, a fixture tree or a recording."""

    roots: Roots
    """The roots the frames describe (for facts a view shows about a device)."""

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        """The frame for now (live) or the next one (recorded).

        ``early`` may be called first with a cheaper frame (device names, no inventory) when
        building the full one takes long.
        """
        ...

    def want(self, part: str, on: bool) -> None:
        """Ask for (or release) a costly part of the frame: one of :data:`BUILT_IN` or a
        registered part's key."""
        ...

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        """Frames from now on detail process ``pid`` (its threads, its open block files) and
        list the processes of cgroup ``cgroup``; None: none (a source of recorded frames
        has nothing more to give)."""
        ...

    def host_info(self) -> HostInfo:
        """Header facts for the host the frames describe."""
        ...

    def close(self) -> None:
        """Release files and children."""
        ...
