"""A toy part's probes run in the one real bpftrace tracer: a child calls ``getppid`` N times
and the frames' traced values for its pid add up to exactly N, with the block latency traced
beside it and without (only the part wanted), and after the set of traced parts changed."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import registry
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.latency.hist import RUNNING
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import marker_present
from tests.support.bpf_misses import tracer_misses
from tests.support.toy_trace import TOY_KEY, ToyGetppidPart, call_getppid, toy_program

pytestmark = [pytest.mark.slow, pytest.mark.root]


def need_tracer() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace)")
    if shutil.which("bpftrace") is None:
        pytest.skip("bpftrace is not installed (make sysdeps installs it)")
    if not marker_present():
        pytest.skip("this kernel has no syscall tracepoints")


def counted(part: LatencyPart, want: int, timeout: float = 20.0) -> tuple[int, int, int]:
    """A child calls getppid ``want`` times; frames until its calls add up to ``want`` less
    what the kernel says it skipped of our tracers' programs meanwhile (other jobs' tracers
    on the same CPU), or the time is up: (the child's pid, the sum, the runs skipped)."""
    missed = tracer_misses()
    pid = call_getppid(want)
    total = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        part.align()
        frame = part.frame({}, time.monotonic())
        assert frame.state == RUNNING, frame.status
        assert not frame.traced_status, frame.traced_status
        value = frame.traced.get(TOY_KEY)
        if isinstance(value, Mapping):
            total += value.get(pid, 0)
        if total >= want - (tracer_misses() - missed):
            break
    return pid, total, tracer_misses() - missed


@pytest.mark.parametrize("timed", [True, False], ids=["with-latency", "part-only"])
def test_a_parts_counts_come_back_exact(timed: bool) -> None:
    need_tracer()
    part = LatencyPart(queue=False, timed=timed, traced={TOY_KEY: toy_program()})
    try:
        assert part.wait_ready(20), part.tracer.error if part.tracer else part._problem
        assert part.tracer is not None and part.tracer.timed == timed
        part.align()
        part.frame({}, time.monotonic())  # the interval before the child
        pid, total, skipped = counted(part, 1234)
        assert 1234 - skipped <= total <= 1234, skipped
        part.align()
        later = part.frame({}, time.monotonic()).traced.get(TOY_KEY)
        assert isinstance(later, Mapping) and pid not in later  # nothing counted twice
    finally:
        part.close()


def test_a_part_added_to_a_running_tracer_counts_exactly_after_the_restart() -> None:
    need_tracer()
    part = LatencyPart(queue=False)
    try:
        assert part.wait_ready(20)
        part.align()
        assert TOY_KEY not in part.frame({}, time.monotonic()).traced
        old = part.tracer
        assert part.set_traced({TOY_KEY: toy_program()})
        assert part.tracer is not old and old is not None and not old.alive
        assert part.wait_ready(20)
        _pid, total, skipped = counted(part, 321)
        assert 321 - skipped <= total <= 321, skipped
    finally:
        part.close()


def test_through_live_source_a_part_alone_runs_the_tracer_then_beside_latency() -> None:
    """Wanted alone, the toy part starts the tracer (no block probe: the frames carry no
    latency) and its counts reach its reader as ``ReadContext.traced``; wanting latency too
    restarts the tracer (that frame is partial) and both come back."""
    need_tracer()
    toy = ToyGetppidPart()
    registry.register(toy)
    source = LiveSource(Roots())
    try:
        source.want(TOY_KEY, True)
        assert source.wait_latency(20)
        tracer = source._latency
        assert tracer is not None and tracer.tracer is not None and not tracer.tracer.timed
        source.next_frame()
        missed = tracer_misses()
        pid = call_getppid(777)
        total = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and total < 777 - (tracer_misses() - missed):
            frame = source.next_frame()
            assert frame.latency is None  # traced for the part alone
            value = frame.get(toy)
            assert value is not None, toy.readers[-1].last
            total += value.get(pid, 0)
        assert 777 - (tracer_misses() - missed) <= total <= 777
        source.want(LATENCY, True)
        frame = source.next_frame()
        assert frame.latency is not None and frame.latency.partial  # restarted
        assert source.wait_latency(20)
        missed = tracer_misses()
        pid = call_getppid(55)
        total = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and total < 55 - (tracer_misses() - missed):
            frame = source.next_frame()
            assert frame.latency is not None and frame.latency.timed, frame.latency
            total += (frame.get(toy) or {}).get(pid, 0)
        assert 55 - (tracer_misses() - missed) <= total <= 55
        source.want(TOY_KEY, False)
        source.want(LATENCY, False)
        source.next_frame()
        assert source._latency is None  # nobody wants it: no tracer
    finally:
        source.close()
        registry.unregister(TOY_KEY)
