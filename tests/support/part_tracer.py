"""A part's :class:`TraceProgram` run through real bpftrace, the way the tracer runs it: its
probe text plus a tick that prints and clears its maps, each tick's maps handed to ``parse``
and the ticks merged. ``take()`` returns what was counted since the previous ``take``.

A test's own ``kill(0)`` marker (``signal 0`` from this process to the child) ends a tick on
demand, so a test waits for a condition, never a fixed time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from iotop_plus.sampling.frame.part import TraceProgram
from iotop_plus.sampling.latency.generations import buffered_text, flush_lines, logical_name
from tests.support.wait import holds_within

TICK_MS = 250


class PartTracer:
    """bpftrace running one part's probes (see the module's docstring)."""

    def __init__(self, program: TraceProgram) -> None:
        self.program = program
        me = os.getpid()
        flush = "".join(f"{line}\n" for line in flush_lines(program.maps))
        text = (
            f"// iotop-plus-test-part-tracer pid={me}\n"
            f"{buffered_text(program.text, program.maps)}\n"
            f'interval:ms:{TICK_MS} {{\n{flush}  printf("tick\\n");\n}}\n'
            f"tracepoint:syscalls:sys_enter_kill /pid == {me} && args->sig == 0/ {{\n"
            f'{flush}  printf("mark\\n");\n}}\n'
        )
        self.proc = subprocess.Popen(
            ["bpftrace", "-f", "json", "-e", text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "BPFTRACE_MAP_KEYS_MAX": "16384"},
        )
        self.lock = threading.Lock()
        self.value: object = None
        self.ticks = 0
        self.marks = 0
        self.attached = threading.Event()
        self.maps: dict[str, object] = {}
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            kind = doc.get("type")
            if kind == "attached_probes":
                self.attached.set()
            elif kind == "map":
                self.maps.update({logical_name(k): v for k, v in (doc.get("data") or {}).items()})
            elif kind == "printf":
                text = str(doc.get("data", "")).strip()
                parsed = self.program.parse(
                    {k: v for k, v in self.maps.items() if isinstance(v, dict)}
                )
                self.maps = {}
                with self.lock:
                    self.value = (
                        parsed if self.value is None else self.program.merge(self.value, parsed)
                    )
                    self.ticks += 1
                    if text == "mark":
                        self.marks += 1

    def mark(self, timeout: float = 30.0) -> None:
        """End a tick now and wait until its maps were parsed (bpftrace says it attached
        before its last probe is in: the marker is sent again until one is seen)."""
        with self.lock:
            before = self.marks

        def marked() -> bool:
            if self.marks > before:
                return True
            os.kill(self.proc.pid, 0)
            return False

        assert holds_within(marked, timeout), "the tracer's mark"

    def take(self) -> object:
        """What was counted since the previous take (after :meth:`mark`)."""
        with self.lock:
            value, self.value = self.value, None
        return value

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(10)


@contextmanager
def part_tracer(program: TraceProgram, timeout: float = 60.0) -> Iterator[PartTracer]:
    """A running :class:`PartTracer`, attached before the body runs; stopped after."""
    tracer = PartTracer(program)
    try:
        if (
            not holds_within(
                lambda: tracer.attached.is_set() or tracer.proc.poll() is not None, timeout
            )
            or not tracer.attached.is_set()
        ):
            err = (
                tracer.proc.stderr.read()
                if tracer.proc.poll() is not None and tracer.proc.stderr
                else ""
            )
            raise AssertionError(f"bpftrace did not attach: {err}")
        yield tracer
    finally:
        tracer.close()
