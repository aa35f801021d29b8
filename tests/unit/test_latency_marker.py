"""The tracer aligned to the frame (REFERENCE.md, "One schedule"): each frame makes a marker
syscall, ``kill(tracer_pid, 0)``, that makes the program print and clear its maps at once; a
frame waits at most 50 ms for that, else marks its latency ``partial``. Frames no longer wait
for the tracer's 250 ms tick."""

from __future__ import annotations

import json
import os
import subprocess
import time

from iotop_plus.sampling.latency.parser import TracerBatch, TracerParser
from iotop_plus.sampling.latency.part import MARK_WAIT_S, LatencyPart
from iotop_plus.sampling.latency.program import tracer_program
from iotop_plus.sampling.latency.tracer import Tracer


def test_a_mark_line_ends_a_batch_marked_for_the_frame() -> None:
    parser = TracerParser()
    assert parser.feed(json.dumps({"type": "map", "data": {"@ds": {"7340042,R": 5000}}})) is None
    batch = parser.feed(json.dumps({"type": "printf", "data": "mark 123456789\n"}))
    assert batch is not None and batch.marked and batch.end_ns == 123456789
    assert batch.ops[(7340042, "read")].device.sum_ns == 5000
    tick = parser.feed(json.dumps({"type": "printf", "data": "tick 223456789\n"}))
    assert tick is not None and not tick.marked


def test_the_program_catches_only_our_signal_0_kill_when_marked() -> None:
    marked = tracer_program(queue=True, marked=True)
    probe = next(ln for ln in marked.splitlines() if "sys_enter_kill" in ln)
    assert probe.startswith("tracepoint:syscalls:sys_enter_kill ")
    assert f"pid == {os.getpid()}" in probe and "args->sig == 0" in probe
    mark_block = marked[marked.index("sys_enter_kill") :]
    for name in ("@h", "@ds", "@dm", "@qs", "@qn"):
        assert f"print({name}__0); clear({name}__0);" in mark_block
    assert 'printf("mark %llu\\n", nsecs);' in mark_block
    # A probe's tracer keeps its own ticks: no extra probe on its runs.
    assert "sys_enter_kill" not in tracer_program(queue=False, issuers=True)


class SilentChildTracer(Tracer):
    """A marked tracer whose child is a real process that never prints (a stalled tracer)."""

    def __init__(self) -> None:
        super().__init__(queue=False, marked=True)

    def start(self) -> None:
        self._proc = subprocess.Popen(["sleep", "30"], text=True)
        self.attached.set()
        self.ready.set()


class AnsweringTracer(Tracer):
    """A marked tracer whose 'child' answers each marker at once, as bpftrace does."""

    def __init__(self) -> None:
        super().__init__(queue=False, marked=True)
        self.marks = 0

    def start(self) -> None:
        self.attached.set()
        self.ready.set()

    def mark(self, timeout: float) -> bool:
        self.marks += 1
        now = time.monotonic_ns()
        with self._arrived:
            self._batches.append(TracerBatch(now, {}, marked=True))
            self.last_mark_ns = self.last_end_ns = now
        return True

    def wait_tick(self, after_ns: int, timeout: float) -> bool:
        raise AssertionError("a marked tracer's frame must not wait for a tick")


def test_a_frame_marks_the_tracer_instead_of_waiting_for_its_tick() -> None:
    tracer = AnsweringTracer()
    part = LatencyPart(make_tracer=lambda: tracer, check=lambda: (None, None))
    part.start()
    tracer.first_tick_ns = time.monotonic_ns()
    for _ in range(3):
        part.align()
        frame = part.frame({}, time.monotonic())
        assert not frame.partial and frame.span_s is not None
    assert tracer.marks == 3
    assert part.waited_s is not None and part.waited_s < MARK_WAIT_S


def test_a_tracer_that_does_not_answer_costs_a_frame_50_ms_and_marks_it_partial() -> None:
    tracer = SilentChildTracer()
    part = LatencyPart(make_tracer=lambda: tracer, check=lambda: (None, None))
    part.start()
    try:
        started = time.monotonic()
        part.align()
        waited = time.monotonic() - started
        # Not a tick: a frame without its marker waited for the next one, up to 0.75 s
        # (wait_tick's limit); 0.5 s leaves a busy host 0.45 s to wake this thread.
        assert MARK_WAIT_S <= waited < 0.5
        frame = part.frame({}, time.monotonic())
        assert frame.partial
        assert frame.status is None  # the tracer is still there: partial, not failed
    finally:
        proc = tracer._proc
        assert proc is not None
        proc.kill()
        proc.wait()
