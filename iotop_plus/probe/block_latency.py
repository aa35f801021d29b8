"""Device-side latency of a probe: the block layer's issue-to-completion time while fio ran.

fio's ``clat`` is measured from user space: it includes the syscall, the filesystem and the
wait for a CPU. The block tracer (:mod:`iotop_plus.sampling.latency.part`) times only what the
device did. Shown side by side they say where a slow probe lost its time: a device p99 far
below fio's points at the host (CPU, filesystem, page cache), a device p99 close to it at
the device.

One :class:`ProbeTracer` serves a probe or a whole sweep: :meth:`ProbeTracer.begin` starts the
tracer (once) and drops what it saw so far, :meth:`ProbeTracer.end` merges what the target
device did since. Requests of other processes on that device count too; the probe result's
other-I/O note says when there were any: the tracer counts the device's requests by issuer
(:func:`issuers_of`), and times the writes that carry a preflush or FUA apart
(:data:`~iotop_plus.sampling.latency.part.FLUSH_WRITE`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from iotop_plus.probe.results import BlockLatency, Issuers, ProbeResult
from iotop_plus.roots import Roots
from iotop_plus.sampling.latency.hist import FAILED, DeviceLatency, Histogram
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import FLUSH_WRITE, dev_t
from iotop_plus.sampling.topology.blockdev import read_dev_numbers

PROBE_SAMPLE = 16
"""A probe's tracer times one request in this many (chosen on the sector, so the figures
are an unbiased sample; requests without sectors, such as preflushes, are all kept): every
request costs the traced device about 1.2 us of BPF here, a sampled one about 0.25 us
(benchmarks/bench_probe_trace.py), and a probe completes tens of thousands of requests
a second, so the sample still holds thousands."""
READY_TIMEOUT_S = 5.0
"""How long a probe waits for the tracer to attach before running untraced."""
BLOCK_PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9))
"""The device-side percentiles shown, labelled as fio's are."""


@dataclass(frozen=True)
class _DevNumbers:
    """What :meth:`LatencyPart.frame` needs to know of a device: its numbers."""

    major: int
    minor: int


def block_line(block: BlockLatency) -> str:
    """``mean 41.2  p50 38.0  p99 77.1  p99.9 120.5  max 240.0  (90,112 requests)``: µs;
    sampled: ``(about 90,112 requests, 1 in 16 timed)``."""
    pcts = "  ".join(f"{label} {v:,.1f}" for label, v in block.percentiles_us)
    count = (
        f"about {block.count:,} requests, 1 in {block.sampled} timed"
        if block.sampled > 1
        else f"{block.count:,} requests"
    )
    return f"mean {block.mean_us:,.1f}  {pcts}  max {block.max_us:,.1f}  ({count})"


def block_latency(hist: Histogram, sampled: int = 1) -> BlockLatency | None:
    """The shown figures of one direction's histogram (of one request in ``sampled``);
    None when it saw no request."""
    if not hist.count:
        return None
    pcts = tuple(
        (label, round(value / 1000.0, 3))
        for label, rank in BLOCK_PERCENTILES
        if (value := hist.percentile(rank)) is not None
    )
    mean = hist.mean_ns or 0.0
    return BlockLatency(
        count=hist.count,
        mean_us=round(mean / 1000.0, 3),
        max_us=round(hist.max_ns / 1000.0, 3),
        percentiles_us=pcts,
        sampled=sampled,
    )


class ProbeTracer:
    """The block tracer of one probe or sweep: started at the first :meth:`begin`, killed by
    :meth:`close`, after which it stays off. Blocking calls: run them in a worker thread;
    :meth:`close` may come from any thread."""

    def __init__(
        self, roots: Roots, make_part: Callable[[int | None], LatencyPart] | None = None
    ) -> None:
        """Args:
        roots: Where the target device's numbers are read.
        make_part: Builds the latency part for a kernel dev_t (tests); default one that
            traces only that device, without the queue split, with issuers, timing one
            request in :data:`PROBE_SAMPLE`.
        """
        self.roots = roots
        self._make_part = make_part or (
            lambda dev: LatencyPart(queue=False, issuers=True, only_dev=dev, sample=PROBE_SAMPLE)
        )
        self._part: LatencyPart | None = None
        self._dev: int | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.problem: str | None = None
        """Why the device-side latency is not traced, once known (one line)."""

    def _numbers(self, device: str) -> dict[str, _DevNumbers]:
        numbers = read_dev_numbers(self.roots, device)
        return {device: _DevNumbers(*numbers)} if numbers is not None else {}

    def _started(self, device: str) -> LatencyPart | None:
        numbers = self._numbers(device).get(device)
        dev = dev_t(numbers.major, numbers.minor) if numbers is not None else None
        with self._lock:  # close() waits for a start under way, so no child escapes it
            if self._closed:
                return None
            if self._part is not None and dev != self._dev:  # traces another device
                self._part.close()
                self._part = None
            if self._part is None:
                self._part = self._make_part(dev)
                self._dev = dev
                self._part.start()
            return self._part

    def begin(self, device: str) -> bool:
        """Start the tracer when it is not running and forget what it saw so far.

        Returns True when the probe about to start is traced; otherwise :attr:`problem`
        says why (None after :meth:`close`).
        """
        if self.problem is not None:
            return False
        part = self._started(device)
        if part is None:
            return False
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not part.wait_ready(0.1):
            if self._closed:
                return False
            first = part.frame({}, time.monotonic())
            if first.state == FAILED or time.monotonic() >= deadline:
                failed = first.state == FAILED and first.status
                self.problem = (
                    first.status
                    if failed
                    else (f"the tracer did not attach within {READY_TIMEOUT_S:.0f} s")
                )
                self.close()
                return False
        part.frame(self._numbers(device), time.monotonic())
        return True

    def end(self, device: str) -> DeviceLatency | None:
        """What ``device`` did since :meth:`begin` (after the tracer's next tick), or None
        when the tracer failed meanwhile (:attr:`problem` says why)."""
        part = self._part
        if part is None or self.problem is not None:
            return None
        tracer = part.tracer
        if tracer is not None:  # a tick after now: the run's last requests are in it
            tracer.wait_tick(time.monotonic_ns(), tracer.tick_ms / 1000 + 0.5)
        frame = part.frame(self._numbers(device), time.monotonic())
        if frame.state == FAILED:
            self.problem = frame.status or "the latency tracer stopped"
            return None
        return frame.devices.get(device, DeviceLatency({}))

    def close(self) -> None:
        """Kill the tracer; it stays off."""
        with self._lock:
            self._closed = True
            part, self._part = self._part, None
        if part is not None:
            part.close()


WRITEBACK_COMM = "kworker/"
"""Kernel workers: in a buffered run they write fio's own dirty pages back."""


def journal_thread(comm: str, fs_device: str) -> bool:
    """Whether ``comm`` is the journal thread of the filesystem on ``fs_device``
    (``jbd2/loop0-8``; a comm is cut at 15 characters: ``jbd2/nvme0n1p12``)."""
    name = f"jbd2/{fs_device}-"
    return comm.startswith(name) or (len(comm) == 15 and name.startswith(comm))


def issuers_of(
    latency: DeviceLatency, fio_pid: int | None, fs_device: str | None, *, buffered: bool
) -> Issuers | None:
    """Who submitted the device's requests during a run, or None when the tracer saw none
    of fio's (it cannot tell then, e.g. on a device without requests).

    Args:
        latency: What the probe's tracer saw on the device.
        fio_pid: fio's pid (its threads and io_uring workers share it).
        fs_device: The device holding the target's filesystem, whose journal thread's
            commits the probe's own fsyncs cause.
        buffered: A run through the page cache: kernel workers write fio's pages back, so
            their requests count as fio's.
    """
    fio = journal = 0
    others: dict[str, int] = {}
    for (pid, comm), n in latency.issuers.items():  # sampled: the tracer scaled them
        if pid == fio_pid or (buffered and comm.startswith(WRITEBACK_COMM)):
            fio += n
        elif fs_device is not None and journal_thread(comm, fs_device):
            journal += n
        else:
            others[f"{comm}[{pid}]"] = others.get(f"{comm}[{pid}]", 0) + n
    if not fio:
        return None
    ranked = tuple(sorted(others.items(), key=lambda kv: (-kv[1], kv[0])))
    return Issuers(fio=fio, journal=journal, others=ranked, sampled=latency.sampled)


def flush_write_of(latency: DeviceLatency | None) -> BlockLatency | None:
    """The device-side latency of the writes that carried a preflush or FUA, or None."""
    if latency is None:
        return None
    return block_latency(latency.op(FLUSH_WRITE), latency.sampled)


def flush_of(latency: DeviceLatency | None) -> BlockLatency | None:
    """The device-side latency of the flush requests, or None."""
    if latency is None:
        return None
    return block_latency(latency.op("flush"), latency.sampled)


def with_block_latency(
    result: ProbeResult, latency: DeviceLatency | None, problem: str | None
) -> ProbeResult:
    """``result`` with each direction's device-side latency, or with a note saying why it
    has none."""
    if latency is None:
        note = f"device-side latency not traced: {problem or 'the tracer gave nothing'}"
        return replace(result, notes=(*result.notes, note))
    read, write = result.read, result.write
    return replace(
        result,
        flush=flush_of(latency),
        read=replace(read, block=block_latency(latency.op("read"), latency.sampled))
        if read
        else None,
        write=replace(write, block=block_latency(latency.op("write"), latency.sampled))
        if write
        else None,
    )
