"""The real bpftrace (0.17 here) answers a frame's marker syscall: frames no longer wait for
the tracer's 250 ms tick (REFERENCE.md, "One schedule")."""

from __future__ import annotations

import os
import shutil
import statistics
import time

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.latency.part import MARK_WAIT_S
from iotop_plus.sampling.latency.program import TICK_MS, marker_present

pytestmark = [pytest.mark.slow, pytest.mark.root]


def need_tracer() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace)")
    if shutil.which("bpftrace") is None:
        pytest.skip("bpftrace is not installed (make sysdeps installs it)")


def test_back_to_back_frames_are_marked_not_held_to_the_tick() -> None:
    need_tracer()
    source = LiveSource(Roots())
    source.want(LATENCY, True)
    try:
        assert source.wait_latency(20)
        part = source._latency
        assert part is not None and part.tracer is not None
        assert marker_present() and part.tracer.marked  # this kernel has the syscall tracepoint
        source.next_frame()  # the baseline
        waits: list[float] = []
        partial = 0
        started = time.monotonic()
        for _ in range(12):
            frame = source.next_frame()
            assert frame.latency is not None and frame.latency.state == "running"
            assert part.waited_s is not None
            waits.append(part.waited_s)
            partial += frame.latency.partial
        took = time.monotonic() - started
        marks = part.tracer.last_mark_ns
    finally:
        source.close()
    # Held to the tick, 12 back-to-back frames took at least 12 ticks (each waited for a new
    # one). Marked, each waits for the tracer's answer: well under a millisecond when idle.
    assert took < 12 * TICK_MS / 1000 / 2, (took, waits)
    assert statistics.median(waits) < MARK_WAIT_S / 2, waits
    assert max(waits) < MARK_WAIT_S + 0.1, waits  # never more than the bound (plus a busy CPU)
    assert partial <= 2, waits  # the 2-core test machine is shared: a late answer may happen
    assert marks > 0
