"""Frames read from the roots: the live assembly of the frame (:mod:`.frame` is its model).

:class:`LiveSource` reads the disks, then the registered frame parts (:mod:`.registry`): the
``always`` parts on every frame that reads devices, the others while some consumer wants their
key (:meth:`LiveSource.want`), each after the parts it names in ``after``. The costly built-in
facts (processes, cgroups and latency) are read only while wanted too. A part's reader is made
when the part is first wanted and closed when nobody wants it any more.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.queue_settings import QUEUES, nr_requests_of
from iotop_plus.sampling.disks.sampler import HostInfo, Sample, Sampler, rates_between
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.model import (
    BUILT_IN,
    CGROUPS,
    LATENCY,
    LATENCY_QUEUE,
    NO_PARTS,
    PROCESSES,
    CgroupFrame,
    Frame,
    FrameEvent,
    ProcessFrame,
)
from iotop_plus.sampling.frame.part import FramePart, PartReader, ReadContext, TracedParts
from iotop_plus.sampling.pressure import read_pressure
from iotop_plus.sampling.processes.issuers_part import ISSUERS
from iotop_plus.sampling.processes.task_cgroups import TaskCgroups
from iotop_plus.sampling.topology.inventory import Inventory

if TYPE_CHECKING:  # the process, cgroup and latency modules load only when someone wants them
    from iotop_plus.sampling.cgroups.reader import CgroupReader, CgroupSample
    from iotop_plus.sampling.frame.part import TraceProgram
    from iotop_plus.sampling.latency.hist import LatencyFrame
    from iotop_plus.sampling.latency.part import LatencyPart
    from iotop_plus.sampling.processes.rates import ProcessSample
    from iotop_plus.sampling.topology.blockdev import OpenBlockFile

QUICK_FIRST_FRAME_DEVICES = 200
"""Above this many devices, the first frame lists them by name before the inventory is read."""


def read_order(parts: tuple[FramePart[Any], ...]) -> tuple[FramePart[Any], ...]:
    """``parts`` in registry order, each moved after the parts its ``after`` names (keys of
    parts not registered, or built in, are ignored)."""
    by_key = {p.key: p for p in parts}
    done: dict[str, FramePart[Any]] = {}

    def visit(p: FramePart[Any], seen: tuple[str, ...]) -> None:
        if p.key in done or p.key in seen:
            return
        for key in p.after:
            if key in by_key:
                visit(by_key[key], (*seen, p.key))
        done[p.key] = p

    for p in parts:
        visit(p, ())
    return tuple(done.values())


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
        readers: Mapping[str, PartReader[Any]] | None = None,
    ) -> None:
        """Args:
        roots: Where /proc and /sys are (default the live ones).
        sampler: The disk sampler (tests pass a canned one); default reads ``roots``.
        devices: Read the block devices; False for a consumer of processes only (``top``),
            whose frames then carry no devices and cost no diskstats, inventory or sysfs read.
        readers: Readers made by the caller for parts that need more than the roots (the
            journal's state directory), by part key; each such part is wanted for the
            source's life.
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
        self._seq = 0
        self._procs: _ProcessPart | None = None
        self._cgroups: _CgroupPart | None = None
        self._priming: threading.Thread | None = None
        self._primed: Frame | None = None
        self._primed_early: Frame | None = None
        self._latency: LatencyPart | None = None
        self._traced: TracedParts | None = None
        self._readers: dict[str, PartReader[Any]] = {}
        self._given = dict(readers or {})
        for key in self._given:
            part = registry.part(key)
            if part is None:
                raise ValueError(f"unknown frame part {key!r}")
            if not part.always:
                self._wanted.add(key)
        self._order: tuple[FramePart[Any], ...] | None = None
        self._order_of: tuple[FramePart[Any], ...] | None = None
        self._nr_requests: Mapping[str, int] = MappingProxyType({})
        self._queues: object = None

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

    def want(self, part: str, on: bool) -> None:
        """Ask for (or release) a costly part of the frame: one of
        :data:`~iotop_plus.sampling.frame.model.BUILT_IN` or a registered part's key."""
        if part not in BUILT_IN and registry.part(part) is None:
            raise ValueError(f"unknown frame part {part!r}")
        if on:
            self._wanted.add(part)
        else:
            self._wanted.discard(part)

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        """Set :attr:`detail_pid` and :attr:`detail_cgroup` for the next frames."""
        self.detail_pid, self.detail_cgroup = pid, cgroup

    def wants(self, part: str) -> bool:
        """Whether some consumer asked for ``part``."""
        return part in self._wanted

    def host_info(self) -> HostInfo:
        """Header facts for this host (or captured tree)."""
        return self.sampler.host_info()

    def close(self) -> None:
        """Release the process reader's open /proc files, every part's reader and the latency
        tracer."""
        if self._procs is not None:
            self._procs.close()
            self._procs = None
        readers, self._readers = self._readers, {}
        for reader in readers.values():
            reader.close()
        self._close_latency()

    def _close_latency(self) -> None:
        part, self._latency = self._latency, None
        if part is not None:
            part.close()

    def wait_latency(self, timeout: float) -> bool:
        """Start the latency tracer now and wait until it traces; False when it cannot."""
        part = self._latency_part()
        return part is not None and part.wait_ready(timeout)

    def _needed(self) -> frozenset[str]:
        """What the frame reads: the wanted parts and what they need (their ``wants``)."""
        needed = set(self._wanted)
        for key in self._wanted:
            part = registry.part(key) if key not in BUILT_IN else None
            if part is not None:
                needed.update(part.wants)
        return frozenset(needed)

    def _latency_part(self) -> LatencyPart | None:
        needed = self._needed()
        queue, who = LATENCY_QUEUE in needed, ISSUERS in needed
        timed = queue or who or LATENCY in needed
        traced = self._traced_programs(needed)
        if not timed and not traced:
            self._close_latency()  # nobody looks: no tracer
            return None
        if self._latency is not None and self._latency.kind != (queue, who):
            self._close_latency()  # insert and attribution probes only while wanted
        if self._latency is None:
            from iotop_plus.sampling.latency.part import LatencyPart

            if self.roots.is_live:
                self._latency = LatencyPart(
                    queue=queue, attribution=who, timed=timed, traced=traced
                )
            else:  # a captured tree has no tracepoints: never trace the host under it
                why = "latency is traced on the live host only, not on a captured tree"
                self._latency = LatencyPart(
                    queue=queue,
                    attribution=who,
                    timed=timed,
                    traced=traced,
                    check=lambda: (why, None),
                )
        else:  # a new set of traced parts restarts the tracer (that frame is partial)
            self._latency.set_traced(traced, timed)
        return self._latency

    def _traced_programs(self, needed: frozenset[str]) -> dict[str, TraceProgram]:
        """The probes the ``needed`` registered parts add to the tracer, by key."""
        wanted = list(registry.chosen(needed))
        if not wanted:
            return {}
        if self._traced is None:
            self._traced = TracedParts(self.roots)
        return self._traced.wanted(wanted, needed)

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
        process_error = None
        try:
            processes = self._process_frame()
        except OSError as exc:  # an unreadable /proc must not stop the device figures
            processes = None
            process_error = f"cannot read {self.roots.proc}: {exc.strerror or exc}"
            if self._procs is not None:
                self._procs.close()
                self._procs = None
        tracer = latency_part.frame(cur.counters, cur.monotonic) if latency_part else None
        # Traced for the parts alone (no view shows latency): the frame carries no latency.
        latency = tracer if tracer is not None and tracer.timed else None
        cgroups = self._cgroup_frame()
        built_in = {PROCESSES: processes, LATENCY: latency, CGROUPS: cgroups}
        values, events, problems = self._parts(cur, inventory, events, built_in, tracer)
        queues = values.get(QUEUES)
        if queues is not self._queues:  # the same object until the settings are re-read
            self._queues = queues
            self._nr_requests = MappingProxyType(
                nr_requests_of(queues) if isinstance(queues, Mapping) else {}
            )
        frame = self._frame(cur, inventory, self._nr_requests, changed, events, processes)
        frame = dataclasses.replace(
            frame,
            process_error=process_error,
            pressure=pressure,
            latency=latency,
            cgroups=cgroups,
            parts=MappingProxyType(values) if values else NO_PARTS,
            problems=problems,
        )
        self._prev = cur
        return frame

    def _parts(
        self,
        cur: Sample,
        inventory: Inventory,
        events: tuple[FrameEvent, ...],
        built_in: Mapping[str, object],
        tracer: LatencyFrame | None = None,
    ) -> tuple[dict[str, object], tuple[FrameEvent, ...], tuple[str, ...]]:
        """Every part due this frame: (values by key, the frame's events with theirs, problem
        lines). Readers of parts nobody wants any more are closed."""
        wanted = frozenset(self._wanted)
        order = registry.chosen(wanted, always=self.devices)  # (the others' modules not loaded)
        if self._order is None or self._order_of is not order:
            self._order, self._order_of = read_order(order), order
        values: dict[str, object] = {}
        seen = dict(built_in)  # what the parts read so far see: the built-in facts, then theirs
        so_far = MappingProxyType(seen)
        traced = tracer.traced if tracer is not None else {}
        traced_status = tracer.traced_status if tracer is not None else {}
        problems: list[str] = []
        live = self.roots.is_live
        for part in self._order:
            key = part.key
            due = (part.always and self.devices) or key in wanted
            if not due or (part.live_only and not live):
                self._drop(key)
                continue
            reader = self._readers.get(key)
            if reader is None:
                given = self._given.get(key)
                reader = given if given is not None else part.reader(self.roots)
                self._readers[key] = reader
            ctx = ReadContext(
                roots=self.roots,
                sample=cur,
                previous=self._prev,
                inventory=inventory,
                wanted=wanted,
                values=so_far,
                events=events,
                traced=traced.get(key),
                tracer_status=traced_status.get(key) or None,
                latency=built_in.get(LATENCY),
            )
            try:
                value, new = reader.read(ctx)
            except OSError as exc:  # one part's unreadable file must not stop the frame
                problems.append(f"{key}: {exc.strerror or exc}")
                continue
            if value is not None:
                values[key] = seen[key] = value
            if new:
                events = (*events, *new)
        if len(self._readers) > len(values):
            keys = {p.key for p in order}
            for key in [k for k in self._readers if k not in keys]:
                self._drop(key)  # not wanted any more, or unregistered since
        return values, events, tuple(problems)

    def _drop(self, key: str) -> None:
        reader = self._readers.pop(key, None)
        if reader is not None:
            reader.close()
            if key in self._given:  # the caller's reader: made again only by the caller
                del self._given[key]

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

    def _cgroup_frame(self) -> CgroupFrame | None:
        if CGROUPS not in self._needed():
            self._cgroups = None
            return None
        if self._cgroups is None:
            self._cgroups = _CgroupPart(self.roots)
        return self._cgroups.frame(self.detail_cgroup)

    def _process_frame(self) -> ProcessFrame | None:
        if PROCESSES not in self._needed():
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
        from iotop_plus.sampling.processes.rates import Accumulator
        from iotop_plus.sampling.processes.reader import ProcessReader
        from iotop_plus.sampling.topology.blockdev import BlockDeviceNames

        self.roots = roots
        self.per_thread = per_thread
        self.reader = ProcessReader(roots, per_thread=per_thread)
        self.accumulator = Accumulator()
        self.names = BlockDeviceNames(roots)
        self.prev: ProcessSample | None = None
        self.task_cgroups = TaskCgroups(roots)

    def frame(self, detail_pid: int | None) -> ProcessFrame:
        from iotop_plus.sampling.processes.rates import detail_rates_between
        from iotop_plus.sampling.processes.rates import rates_between as process_rates
        from iotop_plus.sampling.topology.blockdev import open_block_files

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
        from iotop_plus.sampling.cgroups.reader import CgroupReader

        self.reader: CgroupReader = CgroupReader(roots)
        self.prev: CgroupSample | None = None

    def frame(self, detail: str | None) -> CgroupFrame:
        from iotop_plus.sampling.cgroups.reader import cgroup_members, cgroup_rates_between

        cur = self.reader.sample()
        rates = cgroup_rates_between(self.prev, cur)
        self.prev = cur
        members = cgroup_members(self.reader, detail) if detail is not None else ()
        return CgroupFrame(cur, MappingProxyType(rates), members, detail)


def _device_events(before: frozenset[str], after: frozenset[str]) -> tuple[FrameEvent, ...]:
    added = [FrameEvent("device-added", f"{n} appeared", n) for n in sorted(after - before)]
    gone = [FrameEvent("device-removed", f"{n} vanished", n) for n in sorted(before - after)]
    return (*added, *gone)
