"""One frozen :class:`Frame` per instant, from a :class:`FrameSource`.

Every view (the TUI's table, charts, marks and panels; the recorder, ``serve`` and the
headless commands) reads frames and nothing else, so what works live works the same on a
recording or a fixture tree. :class:`LiveSource` reads the roots: the disks, the queue settings
(one reader, re-read when the devices change, when a setting change arrives and every
:data:`QUEUE_REFRESH_S`) and the journals' new lines (setting and probe events); it reads
the costly parts (processes, cgroups and latency) only while some consumer asks for them with
:meth:`LiveSource.want`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from iotop_plus.roots import Roots
from iotop_plus.sampling.inventory import Inventory
from iotop_plus.sampling.memory import Memory, MemoryPart
from iotop_plus.sampling.part import FramePart
from iotop_plus.sampling.pressure import Pressure, read_pressure
from iotop_plus.sampling.queue_settings import (
    QUEUE_REFRESH_S,
    QueueSettings,
    nr_requests_of,
    read_queues,
)
from iotop_plus.sampling.rates import DeviceRates
from iotop_plus.sampling.sampler import HostInfo, Sample, Sampler, rates_between
from iotop_plus.sampling.task_cgroups import TaskCgroups

if TYPE_CHECKING:  # the process, cgroup and latency modules load only when someone wants them
    from iotop_plus.sampling.blockdev import OpenBlockFile
    from iotop_plus.sampling.cgroups import CgroupRates, CgroupReader, CgroupSample, ThrottleFrame
    from iotop_plus.sampling.health_part import HealthFrame, HealthPart
    from iotop_plus.sampling.issuers import IssuerPart, IssuersFrame
    from iotop_plus.sampling.journal_events import JournalPart
    from iotop_plus.sampling.latency import LatencyPart
    from iotop_plus.sampling.latency_hist import LatencyFrame
    from iotop_plus.sampling.processes import (
        ProcessSample,
        TaskKey,
        TaskRates,
        TaskTotals,
    )

V = TypeVar("V")

NO_PARTS: Mapping[str, object] = MappingProxyType({})
"""A frame without part values (one object, shared by every such frame)."""
QUICK_FIRST_FRAME_DEVICES = 200
"""Above this many devices, the first frame lists them by name before the inventory is read."""

PROCESSES = "processes"
"""What :meth:`LiveSource.want` takes for the per-process view (iotop)."""
LATENCY = "latency"
"""What :meth:`LiveSource.want` takes for per-device latency histograms (the bpftrace tracer)."""
LATENCY_QUEUE = "latency-queue"
"""Latency plus the queue split (insert to issue): the tracer attaches ``block_rq_insert`` too."""
CGROUPS = "cgroups"
"""What :meth:`LiveSource.want` takes for per-cgroup I/O (the cgroups view, ``top --by cgroup``)."""
HEALTH = "health"
"""Device health (a worker thread reads smartctl/sysfs) and I/O errors since the start."""
ISSUERS = "issuers"
"""Who issues each device's requests: the tracer charges each one to its process and cgroup."""
_PARTS = (PROCESSES, LATENCY, LATENCY_QUEUE, CGROUPS, HEALTH, ISSUERS)


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
        from iotop_plus.sampling.journal_events import is_marked

        return is_marked(self.kind, self.record)


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
    issuers: IssuersFrame | None = None
    """Who did each device's I/O, while :data:`ISSUERS` is wanted; None otherwise."""
    queues: Mapping[str, QueueSettings] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    """Queue settings of every whole device (the same object until they are re-read)."""
    journal_restarted: frozenset[str] = frozenset()
    """Journals (``changes``, ``probes``) replaced or cut shorter since the previous frame:
    what was counted from them must be dropped."""
    journal_problems: tuple[str, ...] = ()
    """Why a journal could not be read for this frame (one line each)."""
    memory: Memory | None = None
    """Dirty and writeback memory and their thresholds (read with the disks; cheap)."""
    health: HealthFrame | None = None
    """Each device's latest health reading, its age and I/O errors, while :data:`HEALTH`."""
    throttles: ThrottleFrame | None = None
    """The limited cgroups' rates without the cgroups part (:mod:`.throttle_watch`)."""
    parts: Mapping[str, object] = dataclasses.field(default_factory=lambda: NO_PARTS)
    """The registered frame parts' values by key (:mod:`.registry`); read with :meth:`get`."""

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
        """Ask for (or release) a costly part of the frame, such as :data:`PROCESSES`."""
        ...

    def host_info(self) -> HostInfo:
        """Header facts for the host the frames describe."""
        ...

    def close(self) -> None:
        """Release files and children."""
        ...


class LiveSource:
    """Frames read from the roots (the live host, or a captured tree).

    Not thread-safe: one thread (the sampler thread, or a headless loop) calls
    :meth:`next_frame`. :meth:`want` and :attr:`detail_pid` may be set from another thread;
    the next frame honours them.
    """

    def __init__(
        self,
        roots: Roots | None = None,
        sampler: Sampler | None = None,
        *,
        devices: bool = True,
        journal: JournalPart | None = None,
        queue_refresh_s: float = QUEUE_REFRESH_S,
    ) -> None:
        """Args:
        roots: Where /proc and /sys are (default the live ones).
        sampler: The disk sampler (tests pass a canned one); default reads ``roots``.
        devices: Read the block devices; False for a consumer of processes only (``top``),
            whose frames then carry no devices and cost no diskstats, inventory or sysfs read.
        journal: The state directory's journals, whose new lines the frames carry as
            ``setting`` and ``probe`` events; None: no journal events.
        queue_refresh_s: How often queue settings are re-read when nothing changed.
        """
        self.sampler = sampler if sampler is not None else Sampler(roots)
        self.roots = self.sampler.roots
        self.devices = devices
        self.detail_pid: int | None = None
        """Process whose threads and open block files the next frames carry."""
        self.per_thread = False
        """Process rows per thread instead of per process."""
        self.detail_cgroup: str | None = None
        """Cgroup whose processes the next frames list (``CgroupFrame.members``)."""
        self._wanted: set[str] = set()
        self._prev: Sample | None = None
        self._inventory: Inventory | None = None
        self._names: frozenset[str] | None = None
        self._identities: Mapping[str, str] | None = None
        self._nr_requests: Mapping[str, int] = MappingProxyType({})
        self._queues: Mapping[str, QueueSettings] = MappingProxyType({})
        self._nr_read_at = float("-inf")
        self.journal = journal
        """The journals whose new lines become events."""
        self.queue_refresh_s = queue_refresh_s
        self._seq = 0
        self._procs: _ProcessPart | None = None
        self._cgroups: _CgroupPart | None = None
        self._priming: threading.Thread | None = None
        self._primed: Frame | None = None
        self._primed_early: Frame | None = None
        self._latency: LatencyPart | None = None
        # made when first wanted: its import is a share of a `snapshot`'s start, which needs
        # it only with --issuers (docs/performance.md)
        self._issuers: IssuerPart | None = None
        self._memory = MemoryPart(self.roots)
        self._health: HealthPart | None = None

    def prime(self, not_before: float | None = None) -> None:
        """Read the next frame in a thread while the caller loads the UI, not before
        ``not_before`` (monotonic); the next :meth:`next_frame` returns it. If it is the first,
        the one after it has rates over the UI's load; if a frame was read before (to check the
        devices named), it has rates itself. Either way the first screen has figures."""
        if self._priming is not None or self._primed is not None:
            return

        def run() -> None:
            time.sleep(max(0.0, (not_before or 0.0) - time.monotonic()))
            with contextlib.suppress(Exception):  # next_frame reads again and reports it
                self._primed = self._read(early=self._keep_early)

        self._priming = threading.Thread(target=run, name="iotop-plus-prime", daemon=True)
        self._priming.start()

    def _keep_early(self, frame: Frame) -> None:
        self._primed_early = frame

    def _issuers_frame(
        self, latency: LatencyFrame | None, processes: ProcessFrame | None
    ) -> IssuersFrame | None:
        if self._issuers is None:
            from iotop_plus.sampling.issuers import IssuerPart

            self._issuers = IssuerPart(self.roots)
        return self._issuers.frame(latency, processes)

    def want(self, part: str, on: bool) -> None:
        """Ask for (or release) a costly part of the frame."""
        if part not in _PARTS:
            raise ValueError(f"unknown frame part {part!r}")
        if on:
            self._wanted.add(part)
        else:
            self._wanted.discard(part)

    def wants(self, part: str) -> bool:
        """Whether some consumer asked for ``part``."""
        return part in self._wanted

    def host_info(self) -> HostInfo:
        """Header facts for this host (or captured tree)."""
        return self.sampler.host_info()

    def close(self) -> None:
        """Release the process reader's open /proc files and stop the latency tracer."""
        if self._procs is not None:
            self._procs.close()
            self._procs = None
        if self._health is not None:
            self._health = self._health.stopped()
        self._close_latency()

    def _close_latency(self) -> None:
        part, self._latency = self._latency, None
        if part is not None:
            part.close()

    def wait_latency(self, timeout: float) -> bool:
        """Start the latency tracer now and wait until it traces; False when it cannot."""
        part = self._latency_part()
        return part is not None and part.wait_ready(timeout)

    def _latency_part(self) -> LatencyPart | None:
        queue, who = LATENCY_QUEUE in self._wanted, ISSUERS in self._wanted
        if not queue and not who and LATENCY not in self._wanted:
            self._close_latency()  # nobody looks: no tracer
            return None
        if self._latency is not None and self._latency.kind != (queue, who):
            self._close_latency()  # insert and attribution probes only while wanted
        if self._latency is None:
            from iotop_plus.sampling.latency import LatencyPart

            if self.roots.is_live:
                self._latency = LatencyPart(queue=queue, attribution=who)
            else:  # a captured tree has no tracepoints: never trace the host under it
                why = "latency is traced on the live host only, not on a captured tree"
                self._latency = LatencyPart(queue=queue, attribution=who, check=lambda: (why, None))
        return self._latency

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        """Read the counters now and build the frame (or return the primed one)."""
        priming, self._priming = self._priming, None
        if priming is not None:
            while priming.is_alive():
                priming.join(0.02)
                if self._primed_early is not None and early is not None:
                    early(self._primed_early)
                    self._primed_early = None
            primed, self._primed = self._primed, None
            if primed is not None:
                return primed
        return self._read(early)

    def _read(self, early: Callable[[Frame], object] | None) -> Frame:
        pressure = None
        latency_part = self._latency_part() if self.devices else None
        if latency_part is not None:
            latency_part.start()
            latency_part.align()  # the tracer marks this instant: latency covers the same interval
        if self.devices:
            cur = self.sampler.sample()
            pressure = read_pressure(self.roots)  # three small files: always worth it
        else:
            cur = Sample(time.monotonic(), time.time(), MappingProxyType({}))
        memory, memory_events = self._memory.read() if self.devices else (None, ())
        started = time.monotonic()
        replaced = (
            self._inventory is not None
            and cur.identities is not self._identities
            and cur.identities != self._identities
        )
        changed = self._inventory is None or cur.names != self._names or replaced
        events: tuple[FrameEvent, ...] = ()
        if changed:
            if self._inventory is not None and self._names is not None:
                events = _device_events(self._names, cur.names)
            elif early is not None and len(cur.counters) > QUICK_FIRST_FRAME_DEVICES:
                # Reading sysfs for thousands of devices takes seconds: list them by name
                # first, then describe them.
                early(self._frame(cur, Inventory({}), {}, True, (), None))
            # Hotplug: re-read the inventory only when the set of devices changes, or a device
            # is another under the same name (Sample.identities).
            self._inventory = self.sampler.inventory(cur.names, refresh=replaced)
            self._names, self._identities = cur.names, cur.identities
        inventory = self._inventory
        assert inventory is not None
        journal_events, restarted, journal_problems = self._journal_events(cur)
        setting_changed = any(e.kind == "setting" for e in journal_events)
        if (
            changed
            or setting_changed
            or restarted
            or started - self._nr_read_at >= self.queue_refresh_s
        ):
            whole = [n for n, d in inventory.devices.items() if not d.is_partition]
            queues = read_queues(self.roots, whole)
            if queues != self._queues:
                self._queues = MappingProxyType(queues)
                self._nr_requests = MappingProxyType(nr_requests_of(queues))
            self._nr_read_at = started
        events += journal_events + memory_events
        process_error = None
        try:
            processes = self._process_frame()
        except OSError as exc:  # an unreadable /proc must not stop the device figures
            processes = None
            process_error = f"cannot read {self.roots.proc}: {exc.strerror or exc}"
            self.close()
        frame = self._frame(cur, inventory, self._nr_requests, changed, events, processes)
        latency = latency_part.frame(cur.counters, cur.monotonic) if latency_part else None
        cgroups = self._cgroup_frame()
        from iotop_plus.sampling.health_gate import health_step

        wanted = HEALTH in self._wanted and self.devices
        self._health, health, bad = health_step(
            self._health, wanted, self.roots, inventory, cur, latency
        )
        frame = dataclasses.replace(
            frame,
            health=health,
            events=frame.events + bad,
            process_error=process_error,
            pressure=pressure,
            latency=latency,
            cgroups=cgroups,
            issuers=self._issuers_frame(latency, processes) if ISSUERS in self._wanted else None,
            queues=self._queues,
            journal_restarted=restarted,
            journal_problems=journal_problems,
            memory=memory,
        )
        self._prev = cur
        return frame

    def _frame(
        self,
        cur: Sample,
        inventory: Inventory,
        nr_requests: Mapping[str, int],
        changed: bool,
        events: tuple[FrameEvent, ...],
        processes: ProcessFrame | None,
    ) -> Frame:
        prev = self._prev
        self._seq += 1
        return Frame(
            sample=cur,
            rates=rates_between(prev, cur) if prev is not None else dict.fromkeys(cur.counters),
            inventory=inventory,
            inventory_changed=changed,
            nr_requests=nr_requests,
            elapsed_s=cur.monotonic - prev.monotonic if prev is not None else None,
            ever_used=frozenset(n for n, c in cur.counters.items() if c.ever_used),
            seq=self._seq,
            processes=processes,
            events=events,
        )

    def _journal_events(
        self, cur: Sample
    ) -> tuple[tuple[FrameEvent, ...], frozenset[str], tuple[str, ...]]:
        """The journals' new lines as events, each at its own wall time and the monotonic
        time that matches it (never after this frame)."""
        if self.journal is None:
            return (), frozenset(), ()
        from iotop_plus.sampling.journal_events import journal_event

        lines, restarted, problems = self.journal.read()
        events = tuple(
            journal_event(line.source, line.record, cur.wall_time, cur.monotonic) for line in lines
        )
        return events, restarted, problems

    def _cgroup_frame(self) -> CgroupFrame | None:
        if CGROUPS not in self._wanted:
            self._cgroups = None
            return None
        if self._cgroups is None:
            self._cgroups = _CgroupPart(self.roots)
        return self._cgroups.frame(self.detail_cgroup)

    def _process_frame(self) -> ProcessFrame | None:
        if PROCESSES not in self._wanted:
            if self._procs is not None:  # nobody looks: release the /proc files
                self._procs.close()
                self._procs = None
            return None
        if self._procs is None or self._procs.per_thread != self.per_thread:
            if self._procs is not None:
                self._procs.close()
            self._procs = _ProcessPart(self.roots, self.per_thread)
        return self._procs.frame(self.detail_pid)


class _ProcessPart:
    """The process reader and what rates need between its samples."""

    def __init__(self, roots: Roots, per_thread: bool) -> None:
        from iotop_plus.sampling.blockdev import BlockDeviceNames
        from iotop_plus.sampling.process_reader import ProcessReader
        from iotop_plus.sampling.processes import Accumulator

        self.roots = roots
        self.per_thread = per_thread
        self.reader = ProcessReader(roots, per_thread=per_thread)
        self.accumulator = Accumulator()
        self.names = BlockDeviceNames(roots)
        self.prev: ProcessSample | None = None
        self.task_cgroups = TaskCgroups(roots)

    def frame(self, detail_pid: int | None) -> ProcessFrame:
        from iotop_plus.sampling.blockdev import open_block_files
        from iotop_plus.sampling.processes import detail_rates_between
        from iotop_plus.sampling.processes import rates_between as process_rates

        self.reader.detail_pid = detail_pid
        cur = self.reader.sample()
        prev = self.prev
        rates = process_rates(prev, cur) if prev is not None else {}
        detail = detail_rates_between(prev, cur) if prev is not None else {}
        files: tuple[OpenBlockFile, ...] = ()
        if cur.detail_pid is not None:
            files = open_block_files(self.roots, cur.detail_pid, self.names)
        self.prev = cur
        return ProcessFrame(
            cur,
            MappingProxyType(rates),
            MappingProxyType(self.accumulator.update(cur)),
            MappingProxyType(detail),
            files,
            self.task_cgroups.update(cur.tasks),
        )

    def close(self) -> None:
        self.reader.close()


class _CgroupPart:
    """The cgroup reader and the previous sample its rates need."""

    def __init__(self, roots: Roots) -> None:
        from iotop_plus.sampling.cgroups import CgroupReader

        self.reader: CgroupReader = CgroupReader(roots)
        self.prev: CgroupSample | None = None

    def frame(self, detail: str | None) -> CgroupFrame:
        from iotop_plus.sampling.cgroups import cgroup_members, cgroup_rates_between

        cur = self.reader.sample()
        rates = cgroup_rates_between(self.prev, cur)
        self.prev = cur
        members = cgroup_members(self.reader, detail) if detail is not None else ()
        return CgroupFrame(cur, MappingProxyType(rates), members, detail)


def _device_events(before: frozenset[str], after: frozenset[str]) -> tuple[FrameEvent, ...]:
    added = [FrameEvent("device-added", f"{n} appeared", n) for n in sorted(after - before)]
    gone = [FrameEvent("device-removed", f"{n} vanished", n) for n in sorted(before - after)]
    return (*added, *gone)
