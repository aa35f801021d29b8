"""Per-device block latency from a ``bpftrace`` child on the block tracepoints.

The child runs :func:`tracer_program`: it stamps requests at ``block_rq_insert`` (only when
the queue split is wanted) and ``block_rq_issue``, and at ``block_rq_complete`` counts the
device time (issue to completion) into log-linear buckets keyed by
``(dev_t, rwbs, exp, sub)``. Every :data:`TICK_MS` it prints its maps as JSON lines
(``bpftrace -f json``), clears them and prints ``tick <nsecs>`` (CLOCK_MONOTONIC, the clock
of ``time.monotonic``). :class:`TracerParser` turns those lines into :class:`TracerBatch`es;
:class:`LatencyPart` hands each frame the batches that ended before it (the delta since the
previous frame), keyed by device name.

The tracer aligns to the frame, not the frame to its tick (the one
schedule, :mod:`iotop_plus.sampling.clock`):
before each frame reads the disks, :meth:`LatencyPart.align` makes a marker syscall,
``kill(tracer_pid, 0)``, which the program catches at ``syscalls:sys_enter_kill`` (only ours:
filtered by our pid and signal 0) to print and clear its maps at once and say
``mark <nsecs>``. The frame waits at most :data:`MARK_WAIT_S` for that, else its latency is
``partial`` (it ends at the last output; the rest goes to the next frame). Where the kernel has
no syscall tracepoints, frames wait for the next tick.

A probe's tracer (``issuers=True``) also says who issued the requests and keeps writes that
carry a preflush or FUA apart (:func:`tracer_program`).

Frame parts that trace add their probes to this one tracer (the tracer contract of
:class:`~iotop_plus.sampling.frame.part.TraceProgram`): :class:`~.part.TracedParts` gathers the
wanted
parts' programs, :class:`LatencyPart` runs them beside the block probes (or alone, without
``timed``, while no view shows latency), and each frame's :attr:`LatencyFrame.traced` holds
every part's value merged over the frame's ticks (:attr:`LatencyFrame.traced_status`: why a
part has none). A new set of traced parts restarts the tracer, and that frame is
``partial``.

Safety: the tracer runs only as root, from the system directories (:mod:`iotop_plus.programs`),
under ``setpriv --pdeathsig KILL`` started from a thread that lives as long as the child, so
the child dies with us; :meth:`Tracer.close` kills it.

One module per job: the program text and the kernel checks in
:mod:`~iotop_plus.sampling.latency.program`, the JSON parser in
:mod:`~iotop_plus.sampling.latency.parser`, the child process in
:mod:`~iotop_plus.sampling.latency.tracer`, blind detection in
:mod:`~iotop_plus.sampling.latency.blind`; this module is the frame's part and names them all
(``__all__``) so ``from iotop_plus.sampling.latency.part import ...`` keeps working.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.sampling.health.io_errors import tracer_errors
from iotop_plus.sampling.latency.blind import BlindWatch
from iotop_plus.sampling.latency.hist import (
    FAILED,
    RUNNING,
    STARTING,
    DeviceLatency,
    LatencyFrame,
    OpLatency,
    PidIO,
)
from iotop_plus.sampling.latency.parser import TracerBatch
from iotop_plus.sampling.latency.program import (
    FLUSH_WRITE,
    dev_t,
    errors_present,
    marker_present,
    tracer_problem,
)
from iotop_plus.sampling.latency.tracer import (
    Tracer,
)

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.part import TraceProgram

__all__ = [
    "ALIGN_SLACK_NS",
    "MARK_WAIT_S",
    "LatencyPart",
]

BUSY_IOPS = 20_000
"""A frame tracer whose devices complete this many requests a second (over
:data:`BUSY_FRAMES` frames in a row) starts timing one in :data:`BUSY_SAMPLE`: each request
costs the device about 1 us of BPF (benchmarks/bench_latency.py), a sampled one about 0.2."""
BUSY_FRAMES = 3
BUSY_SAMPLE = 8
QUIET_FRAMES = 10
"""...and times every request again after this many frames in a row below a quarter of
:data:`BUSY_IOPS` (each switch restarts the tracer: hysteresis keeps them rare)."""
MARK_WAIT_S = 0.05
"""How long a frame waits for the tracer's output after its marker syscall (then: partial)."""
ALIGN_SLACK_NS = 20_000_000
"""A tick this recent (20 ms) ends the interval; otherwise a frame waits for the next one."""


def _names_by_dev(counters: Mapping[str, object]) -> dict[int, str]:
    out: dict[int, str] = {}
    for name, c in counters.items():
        major, minor = getattr(c, "major", None), getattr(c, "minor", None)
        if isinstance(major, int) and isinstance(minor, int):
            out[dev_t(major, minor)] = name
    return out


def _traced(
    batches: list[TracerBatch], programs: Mapping[str, TraceProgram]
) -> tuple[Mapping[str, object], dict[str, str]]:
    """Each traced part's value over ``batches`` (added up with its ``merge``), and the last
    problem each part had in them."""
    values: dict[str, object] = {}
    problems: dict[str, str] = {}
    for batch in batches:
        problems.update(batch.traced_problems)
        for key, value in batch.traced.items():
            program = programs.get(key)
            if program is None:
                continue
            if key in values:
                try:
                    value = program.merge(values[key], value)
                except Exception as exc:  # a part's bug costs its value, never the frame
                    problems[key] = f"{key}: cannot add up the tracer's output: {exc!r:.120}"
                    continue
            values[key] = value
    return MappingProxyType(values), problems


def _attributed(
    batches: list[TracerBatch], names: Mapping[int, str]
) -> Mapping[str, Mapping[int, PidIO]]:
    """The batches' requests per device name and issuer (a pid or a worker's job)."""
    out: dict[str, dict[int, PidIO]] = {}
    for batch in batches:
        for (dev, pid), io in batch.attributed.items():
            name = names.get(dev)
            if name is None:
                continue
            mine = out.setdefault(name, {})
            mine[pid] = mine[pid].merged(io) if pid in mine else io
    frozen = {n: MappingProxyType(p) for n, p in out.items()}
    return MappingProxyType(frozen)


class LatencyPart:
    """The latency part of :class:`~iotop_plus.sampling.frame.model.LiveSource`'s frames."""

    def __init__(
        self,
        *,
        queue: bool = True,
        make_tracer: Callable[[], Tracer] | None = None,
        check: Callable[[], tuple[str | None, str | None]] = tracer_problem,
        issuers: bool = False,
        only_dev: int | None = None,
        attribution: bool = False,
        sample: int | None = None,
        timed: bool = True,
        traced: Mapping[str, TraceProgram] | None = None,
    ) -> None:
        """Args:
        queue: Trace the queue split too (``block_rq_insert``).
        timed: Time block requests; False: trace only for ``traced`` (no view shows
            latency: the frames' :attr:`LatencyFrame.devices` stay empty).
        traced: The probes the wanted parts add to the tracer, by part key (the frames
            carry their values in :attr:`LatencyFrame.traced`); :meth:`set_traced` changes
            them.
        make_tracer: Builds the tracer (tests); default a :class:`Tracer`.
        check: The preflight (root, bpftrace, tracepoints); tests inject one.
        issuers: A probe's tracer: devices' latency carries their issuers and flush+writes.
        only_dev: Trace only this kernel dev_t (a probe's device).
        attribution: Charge requests to their issuers (:attr:`LatencyFrame.issuers`).
        sample: Time one request in this many (a power of two, chosen on the sector; the
            devices' :attr:`DeviceLatency.sampled` says so); 1: every request. None (the
            frames' tracer): every request until the devices are busy (:data:`BUSY_IOPS`).
        """
        self.queue = queue
        self.attribution = attribution
        self.timed = timed
        self.traced: Mapping[str, TraceProgram] = MappingProxyType(dict(traced or {}))
        """The traced parts' programs the tracer runs, by key."""
        self._restarted = False
        self.adaptive = sample is None
        self.sample = sample or 1
        self._busy = self._quiet = 0
        self._make_tracer = make_tracer or (
            lambda: Tracer(
                queue=queue,
                issuers=issuers,
                only_dev=only_dev,
                marked=not issuers and marker_present(),  # a probe's tracer: its own ticks
                errors=self.timed and not issuers and errors_present(),  # the frames' I/O errors
                attribution=attribution,
                sample=self.sample,
                timed=self.timed,
                traced=self.traced,
            )
        )
        self._check = check
        self.tracer: Tracer | None = None
        self._problem: str | None = None
        self._notice: str | None = None
        self._last_end_ns: int | None = None
        self._started = False
        self._watch = BlindWatch()
        self._partial = False
        self.waited_s: float | None = None
        """How long the last :meth:`align` waited for the tracer (measurements)."""

    @property
    def kind(self) -> tuple[bool, bool]:
        """``(queue, attribution)``: what the tracer's program traces beside device time."""
        return self.queue, self.attribution

    def set_traced(self, traced: Mapping[str, TraceProgram], timed: bool | None = None) -> bool:
        """Trace these parts' probes (by key) from now on, and time block requests or not
        (``timed``; None: as now). When the set of keys or ``timed`` changed, a running
        tracer is restarted with the new program, and the frames until it delivers are
        ``partial``. True when it changed."""
        timed = self.timed if timed is None else timed
        if traced.keys() == self.traced.keys() and timed == self.timed:
            return False
        self.traced = MappingProxyType(dict(traced))
        self.timed = timed
        if self.tracer is not None:
            self._restarted = True
            self._restart()
        return True

    def start(self) -> None:
        """Check and start the tracer (once; :meth:`close` then a new part restarts)."""
        if self._started:
            return
        self._started = True
        try:
            self._problem, self._notice = self._check()
        except (OSError, subprocess.SubprocessError) as exc:
            self._problem = f"cannot check for the latency tracer: {exc}"
        if self._problem is None:
            self.tracer = self._make_tracer()
            self.tracer.start()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the probes are attached (or the tracer failed); True when attached."""
        self.start()
        tracer = self.tracer
        if tracer is None:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if tracer.ready.wait(0.05):
                return True
            if tracer.error is not None:
                return False
        return False

    def align(self) -> None:
        """End the tracer's interval here: mark it (waiting at most :data:`MARK_WAIT_S`, else
        the next frame's latency is partial), or without a marker wait for its next tick."""
        tracer = self.tracer
        self._partial = False
        if tracer is None or not tracer.ready.is_set() or tracer.error is not None:
            return
        asked = time.monotonic()
        if tracer.marked:
            self._partial = not tracer.mark(MARK_WAIT_S) and tracer.error is None
            self.waited_s = time.monotonic() - asked
            return
        # A tick that ended a moment ago counts (the reader may not have seen it yet):
        # waiting for the one after would stretch every interval by a tick. But not the
        # tick the previous frame already ended at: a frame asked for within the slack
        # would cover no time at all.
        after = time.monotonic_ns() - ALIGN_SLACK_NS
        if self._last_end_ns is not None:
            after = max(after, self._last_end_ns + 1)
        tracer.wait_tick(after, tracer.tick_ms / 1000 + 0.5)
        self.waited_s = time.monotonic() - asked

    def frame(self, counters: Mapping[str, object], monotonic: float) -> LatencyFrame:
        """The latency since the previous call, for the devices in ``counters``."""
        self.start()
        notice, self._notice = self._notice, None
        tracer = self.tracer
        if tracer is None:
            return self._idle(FAILED, self._problem, notice)
        batches = tracer.take(int(monotonic * 1e9))
        if not batches:
            if tracer.error is not None:
                return self._idle(FAILED, tracer.error, notice)
            if not tracer.ready.is_set():
                return self._idle(STARTING, "starting tracer…", notice)
        traced, traced_status = _traced(batches, self.traced)
        if not self.timed:
            return self._traced_only(tracer, batches, traced, traced_status, notice)
        names = _names_by_dev(counters)
        merged: dict[str, dict[str, OpLatency]] = {}
        who: dict[str, dict[tuple[int, str], int]] = {}
        pids = _attributed(batches, names)
        for batch in batches:
            for (dev, op), lat in batch.ops.items():
                name = names.get(dev)
                if name is None:  # a device that vanished (or never was ours): dropped
                    continue
                ops = merged.setdefault(name, {})
                ops[op] = ops[op].merged(lat) if op in ops else lat
            for (dev, pid, comm), n in batch.issuers.items():
                name = names.get(dev)
                if name is not None:
                    mine = who.setdefault(name, {})
                    mine[(pid, comm)] = mine.get((pid, comm), 0) + n
        span = self._span(tracer, batches)
        devices = {
            n: DeviceLatency(
                MappingProxyType(merged.get(n, {})),
                MappingProxyType(who.get(n, {})),
                self.sample,
            )
            for n in merged.keys() | who.keys()
        }
        status = tracer.error  # died after this frame's batches: say so now
        seen = {  # sampled: the tracer's estimates of all requests
            n: d.op("read").count + d.op("write").count + d.op(FLUSH_WRITE).count
            for n, d in devices.items()
        }
        if status is None and self._watch.blind(counters, seen):
            self._restart()
            notice = (
                "latency tracer restarted: its map of requests in flight had filled up with "
                "completions the kernel did not report"
            )
        elif status is None and self.adaptive and batches:
            notice = self._adapt(sum(seen.values()), span) or notice
        partial = (self._partial or self._restarted) and not status
        self._partial = self._restarted = False
        if status is not None:
            traced_status.update(dict.fromkeys(self.traced, status))
        return LatencyFrame(
            FAILED if status else RUNNING,
            MappingProxyType(devices),
            status=status,
            span_s=span,
            notice=notice,
            partial=partial,
            attributed=self.attribution,
            issuers=pids,
            errors=tracer_errors(batches, names) if tracer.errors else None,
            traced=traced,
            traced_status=MappingProxyType(traced_status),
        )

    def _span(self, tracer: Tracer, batches: list[TracerBatch]) -> float:
        """The traced time ``batches`` cover: from the previous frame's end (or the first
        whole tick) to the last batch's end."""
        start_ns = self._last_end_ns
        if start_ns is None:  # traced whole from the first (dropped) tick on
            start_ns = tracer.first_tick_ns
            if start_ns is None and batches:
                start_ns = batches[0].end_ns - tracer.tick_ms * 1_000_000
            self._last_end_ns = start_ns
        if batches:
            self._last_end_ns = batches[-1].end_ns
        end_ns = self._last_end_ns
        return (end_ns - start_ns) / 1e9 if start_ns is not None and end_ns is not None else 0.0

    def _idle(self, state: str, status: str | None, notice: str | None) -> LatencyFrame:
        """A frame without the tracer's figures (starting, or failed: ``status`` says why,
        for the traced parts too)."""
        return LatencyFrame(
            state,
            status=status,
            notice=notice,
            timed=self.timed,
            partial=self._restarted and state != FAILED,
            traced_status=MappingProxyType(dict.fromkeys(self.traced, status or "")),
        )

    def _traced_only(
        self,
        tracer: Tracer,
        batches: list[TracerBatch],
        traced: Mapping[str, object],
        traced_status: dict[str, str],
        notice: str | None,
    ) -> LatencyFrame:
        """The frame of a tracer that traces only for the parts (no block timing)."""
        span = self._span(tracer, batches)
        status = tracer.error
        partial = (self._partial or self._restarted) and not status
        self._partial = self._restarted = False
        if status is not None:
            traced_status.update(dict.fromkeys(self.traced, status))
        return LatencyFrame(
            FAILED if status else RUNNING,
            status=status,
            span_s=span,
            notice=notice,
            partial=partial,
            timed=False,
            traced=traced,
            traced_status=MappingProxyType(traced_status),
        )

    def _adapt(self, requests: int, span_s: float) -> str | None:
        """Switch between timing every request and one in :data:`BUSY_SAMPLE` by the rate
        of the frame just taken; the notice when it switched."""
        if span_s <= 0:
            return None
        rate = requests / span_s
        if self.sample == 1:
            self._busy = self._busy + 1 if rate >= BUSY_IOPS else 0
            if self._busy < BUSY_FRAMES:
                return None
            self.sample = BUSY_SAMPLE
            said = (
                f"latency: over {BUSY_IOPS:,} requests/s: timing 1 request in {BUSY_SAMPLE} "
                "(chosen on the sector: an unbiased sample; counts are scaled)"
            )
        else:
            self._quiet = self._quiet + 1 if rate < BUSY_IOPS / 4 else 0
            if self._quiet < QUIET_FRAMES:
                return None
            self.sample = 1
            said = "latency: timing every request again"
        self._busy = self._quiet = 0
        self._restart()
        return said

    def _restart(self) -> None:
        if self.tracer is not None:
            self.tracer.close()
        self._watch = BlindWatch()
        self._last_end_ns = None
        self.tracer = self._make_tracer()
        self.tracer.start()

    def close(self) -> None:
        """Kill the tracer."""
        if self.tracer is not None:
            self.tracer.close()
