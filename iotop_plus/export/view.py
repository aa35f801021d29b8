"""What one scrape exports: an immutable :class:`ExportView`, rebuilt by the sampler thread.

:class:`ExportSampler` drives a :class:`~iotop_plus.sampling.frame.live.LiveSource` on its own
thread, one frame per interval; a scrape only reads the latest view, never ``/proc``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.export.cgroups import CgroupSelection, CgroupSeries
from iotop_plus.export.counters import MonotonicDisks
from iotop_plus.export.events import ProbeFigures, StateEvents
from iotop_plus.export.latency import LatencyTotals, OpTotals
from iotop_plus.sampling.clock import Clock, Schedule
from iotop_plus.sampling.disks.queue_settings import QueuePart, QueueSettings
from iotop_plus.sampling.disks.sampler import select_devices
from iotop_plus.sampling.frame.model import CGROUPS, Frame, FrameSource
from iotop_plus.sampling.latency.hist import FAILED
from iotop_plus.why.verdicts import Judge

_EMPTY: Mapping = MappingProxyType({})
_NO_QUEUES: Mapping[str, QueueSettings] = MappingProxyType({})


@dataclass(frozen=True)
class ExportView:
    """Everything one scrape exports, as of the latest frame."""

    frame: Frame | None = None
    """The latest frame; None until the first one was read."""
    devices: tuple[str, ...] = ()
    """The devices exported, in kernel order."""
    disk_values: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: _EMPTY)
    """Each exported device's 17 counters, made monotonic across the 32-bit ms wrap."""
    queues: Mapping[str, QueueSettings] = field(default_factory=lambda: _EMPTY)
    """Queue settings of the exported whole devices."""
    changes: Mapping[tuple[str, str], int] = field(default_factory=lambda: _EMPTY)
    """Journaled setting changes by (device, setting)."""
    probes: Mapping[tuple[str, str], ProbeFigures] = field(default_factory=lambda: _EMPTY)
    """The last probe result by (target, preset)."""
    latency: Mapping[tuple[str, str], OpTotals] = field(default_factory=lambda: _EMPTY)
    """Latency histograms by (device, op), accumulated since serve started (``--latency``)."""
    cgroups: tuple[CgroupSeries, ...] = ()
    """The exported cgroups (with I/O, no deeper than ``--cgroup-depth``), by path."""
    frame_errors: int = 0
    """Frames that could not be read, or carried lines that did not parse."""
    static_version: int = 0
    """Bumped whenever the slow-changing part (inventory, queues, changes, probes) changed."""


class ExportSampler:
    """Reads a frame every ``interval`` seconds on its own thread; :meth:`view` is the latest.

    :meth:`step` reads one frame on the caller's thread (for ``--textfile``, tests and
    benchmarks); :meth:`start` runs steps on a thread until :meth:`stop`.
    """

    def __init__(
        self,
        source: FrameSource,
        interval: float,
        *,
        show_all: bool = False,
        warn: Callable[[str], object] | None = None,
        cgroup_depth: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        """Args:
        source: Where frames come from (asked for cgroups when ``cgroup_depth`` is set).
        interval: Seconds between frames on the thread.
        show_all: Export every device, not the TUI's default selection.
        warn: Called with one line when the latency tracer cannot run (once per reason).
        cgroup_depth: Export cgroups up to this many levels below the root; None: none.
        clock: The schedule's clock (tests step a fake one); default the real one.
        """
        self.source = source
        self.schedule = Schedule(interval, clock=clock)
        """When frames are taken, on the thread or by ``serve --textfile``'s loop."""
        self.show_all = show_all
        self.events = StateEvents()
        self.problem: str | None = None
        """The last frame's read error, one line; None when it was read."""
        self.warn = warn
        """Called (on the sampler thread) with each new one-line status of the tracer."""
        self._latency = LatencyTotals()
        self._latency_view: Mapping[tuple[str, str], OpTotals] = _EMPTY
        self._latency_said: str | None = None
        self._cgroups = CgroupSelection(cgroup_depth) if cgroup_depth is not None else None
        if cgroup_depth is not None:
            source.want(CGROUPS, True)
        self._view = ExportView()
        self._disks = MonotonicDisks()
        self._errors = 0
        self._static = 0
        self._queues: Mapping[str, QueueSettings] = _EMPTY
        self._queues_from: Mapping[str, QueueSettings] | None = None
        self._queue_names: tuple[str, ...] = ()
        self._devices: tuple[str, ...] = ()
        self._device_key: tuple[object, frozenset[str], int] | None = None
        self.on_view: Callable[[ExportView], object] | None = None
        """Called on the sampler thread with each new view (the collector renders it ahead)."""
        self._judge = Judge()
        """Judges each frame's exported devices with the frames before it."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def view(self) -> ExportView:
        """The latest view (an immutable object: safe to read from any thread)."""
        return self._view

    def step(self) -> ExportView:
        """Read one frame and publish the view built from it."""
        try:
            frame = self.source.next_frame()
        except Exception as exc:  # a vanished or unreadable diskstats: count it, keep serving
            self._errors += 1
            self.problem = f"cannot read a frame: {exc}"
            self._view = _replace(self._view, frame_errors=self._errors)
            if self.on_view is not None:
                self.on_view(self._view)
            return self._view
        self.problem = None
        if frame.sample.problems:
            self._errors += 1
        counters = frame.sample.counters
        self._disks.update(counters)
        key = (frame.inventory, frame.ever_used, len(counters))
        if key != self._device_key:
            names = set(
                select_devices(counters, frame.inventory, show_all=self.show_all, hide_virtual=True)
            )
            devices = tuple(n for n in counters if n in names)
            if devices != self._devices:
                self._static += 1
            self._devices = devices
            self._device_key = key
        devices = self._devices
        if any(n not in counters for n in devices):
            # Gone from diskstats while the inventory still lists it (a loop device detached
            # between the two reads; a captured tree): not exported while it is gone.
            devices = self._devices = tuple(n for n in devices if n in counters)
            self._static += 1
        frame = self._judge.judged(frame, [n for n in devices if frame.rates.get(n) is not None])
        events_changed = self.events.take(frame)
        whole = tuple(
            n for n in devices if (dev := frame.inventory.get(n)) is None or not dev.is_partition
        )
        # The frame's queue part is re-read by the source (devices changed, a setting change
        # journaled, every QUEUE_REFRESH_S); it is the same object until then.
        in_force = frame.get(QueuePart) or _NO_QUEUES
        if in_force is not self._queues_from or whole != self._queue_names:
            queues = {n: in_force[n] for n in whole if n in in_force}
            if queues != self._queues or whole != self._queue_names:
                self._static += 1
            self._queues, self._queue_names = MappingProxyType(queues), whole
            self._queues_from = in_force
        if events_changed or frame.inventory_changed:
            self._static += 1
        if self._latency.add(frame.latency):
            self._latency_view = MappingProxyType(self._latency.snapshot())
        self._say_latency(frame)
        self._view = ExportView(
            frame=frame,
            devices=devices,
            disk_values=MappingProxyType({n: self._disks.values(n, counters[n]) for n in devices}),
            queues=self._queues,
            changes=MappingProxyType(dict(self.events.changes)),
            probes=MappingProxyType(dict(self.events.probes)),
            latency=self._latency_view,
            cgroups=self._cgroups.select(frame.cgroups) if self._cgroups is not None else (),
            frame_errors=self._errors,
            static_version=self._static,
        )
        if self.on_view is not None:
            self.on_view(self._view)
        return self._view

    def _say_latency(self, frame: Frame) -> None:
        latency = frame.latency
        if latency is None or self.warn is None:
            return
        status = latency.status if latency.state == FAILED else None
        if status is not None and status != self._latency_said:
            self.warn(f"latency not exported: {status}")
        self._latency_said = status

    @property
    def interval(self) -> float:
        """Seconds between frames."""
        return self.schedule.interval

    def start(self) -> None:
        """Read the first frame now, then one per interval on a daemon thread (an exception
        there ends the thread and goes to ``threading.excepthook``: ``serve`` then exits 1)."""
        self.schedule.start()
        self.step()
        self._thread = threading.Thread(target=self._run, name="iotop-plus-serve", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self.schedule.wait(self._stop):
            self.step()

    def stop(self) -> None:
        """Stop the thread and release the source."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.source.close()


def _replace(view: ExportView, **changes: object) -> ExportView:
    import dataclasses

    return dataclasses.replace(view, **changes)  # type: ignore[arg-type]
