"""Frame parts' :class:`~iotop_plus.sampling.frame.part.TraceProgram`\\ s run through real
bpftrace the way the tracer runs them: their probe text with two copies of each printed map
(:func:`buffered_text`), a tick every :data:`TICK_MS` and a mark on demand that each flip the
copies and print and clear the maps (:func:`flush_lines`), and each program's ``parse`` given
its own maps of one tick, the ticks merged. :meth:`PartTracer.take` gives each program's value
since the previous take.

The mark is this process's ``kill(child, 0)``, caught at ``syscalls:sys_enter_kill`` as the
tracer's frames mark: a test ends a tick when it wants (:meth:`PartTracer.mark`) and waits
for a condition, never a fixed time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from iotop_plus.sampling.frame.part import TraceProgram
from iotop_plus.sampling.latency.generations import buffered_text, flush_lines, logical_name
from iotop_plus.sampling.latency.tracer import MAP_KEYS_MAX
from tests.support.wait import holds_within

MARKER = "// iotop-plus-part-test"
"""The program's first line (with this process's pid): not the tracer's marker, so nothing
that looks for the app's tracers finds a test's."""
TICK_MS = 250


def require_bpftrace() -> None:
    """Skip the calling test, with the reason, when bpftrace cannot run here."""
    if os.geteuid() != 0:
        pytest.skip("needs root to trace")
    if not any(
        os.access(os.path.join(d, "bpftrace"), os.X_OK) for d in os.environ["PATH"].split(":")
    ):
        pytest.skip("bpftrace is not installed")


def program_text(programs: Sequence[TraceProgram], tick_ms: int, pid: int) -> str:
    """The whole program: the parts' probes, a tick and the mark of ``pid``'s ``kill(0)``,
    each of which prints and clears every part's maps, as the tracer has them."""
    flushed = flush_lines([m for p in programs for m in p.maps])
    return "\n".join([
        f"{MARKER} pid={pid}",
        *(buffered_text(p.text, p.maps) for p in programs),
        f"interval:ms:{tick_ms} {{", *flushed, '  printf("tick\\n");', "}",
        f"tracepoint:syscalls:sys_enter_kill /pid == {pid} && args->sig == 0/ {{",
        *flushed, '  printf("mark\\n");', "}",
    ]) + "\n"  # fmt: skip


class PartTracer:
    """One bpftrace child running ``programs`` (see the module's docstring)."""

    def __init__(self, programs: Sequence[TraceProgram], tick_ms: int = TICK_MS) -> None:
        self.programs = tuple(programs)
        self.text = program_text(self.programs, tick_ms, os.getpid())
        self._lock = threading.Lock()
        self._values: list[object | None] = [None] * len(self.programs)
        self._printed: dict[str, object] = {}
        self.ticks = 0
        """Ticks and marks whose maps were parsed."""
        self.marks = 0
        """Marks whose maps were parsed."""
        self.attached = threading.Event()
        self.errors: list[str] = []
        """What bpftrace said on stderr (but its harmless start-up lines)."""
        self._proc = subprocess.Popen(
            ["bpftrace", "-f", "json", "-e", self.text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "BPFTRACE_MAP_KEYS_MAX": str(MAP_KEYS_MAX)},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._err.start()

    def _read_err(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            if "RLIMIT_MEMLOCK" not in line:
                self.errors.append(line.rstrip())

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                doc: Any = json.loads(line)
            except ValueError:
                continue
            kind, data = doc.get("type"), doc.get("data")
            if kind == "attached_probes":
                self.attached.set()
            elif kind == "map" and isinstance(data, dict):
                self._printed.update({logical_name(str(k)): v for k, v in data.items()})
            elif kind == "printf" and str(data).strip() in ("tick", "mark"):
                self._tick_ended(mark=str(data).strip() == "mark")

    def _tick_ended(self, mark: bool) -> None:
        """Each program's ``parse`` of its maps of the tick that ended (a map not printed is
        empty, a map printed as one value is ``{"": value}``, as the tracer gives them)."""
        printed, self._printed = self._printed, {}
        with self._lock:
            for i, program in enumerate(self.programs):
                maps = {m: printed.get(m, {}) for m in program.maps}
                value = program.parse(
                    {m: v if isinstance(v, dict) else {"": v} for m, v in maps.items()}
                )
                old = self._values[i]
                self._values[i] = value if old is None else program.merge(old, value)
            self.ticks += 1
            if mark:
                self.marks += 1

    @property
    def pid(self) -> int:
        """The bpftrace child's pid."""
        return self._proc.pid

    def _running(self, what: str) -> None:
        if self._proc.poll() is not None:
            raise AssertionError(f"bpftrace ended before {what}: {self.errors[-5:]}")

    def wait_attached(self, timeout: float = 60.0) -> None:
        """Wait until bpftrace attached its probes and both a tick and a mark were parsed
        (bpftrace says it attached before its last probe is in)."""
        if not holds_within(
            lambda: (self.attached.is_set() and self.ticks > 0) or self._proc.poll() is not None,
            timeout,
        ):
            raise AssertionError(f"bpftrace did not start in {timeout} s: {self.errors[-5:]}")
        self._running("its first tick")
        self.mark(timeout)

    def mark(self, timeout: float = 30.0) -> None:
        """End a tick now and wait until its maps were parsed: what the probes counted
        before this call is then in :meth:`take`. The marker is sent again until a mark
        is seen."""
        with self._lock:
            before = self.marks

        def marked() -> bool:
            if self.marks > before:
                return True
            self._running("a mark")
            os.kill(self._proc.pid, 0)
            return False

        if not holds_within(marked, timeout):
            raise AssertionError(f"no mark in {timeout} s: {self.errors[-5:]}")

    def wait_tick(self, timeout: float = 30.0) -> None:
        """Wait until the next tick's (or mark's) maps were parsed."""
        with self._lock:
            before = self.ticks
        if not holds_within(lambda: self.ticks > before or self._proc.poll() is not None, timeout):
            raise AssertionError(f"no tick in {timeout} s: {self.errors[-5:]}")
        self._running("a tick")

    def take(self) -> list[object | None]:
        """Each program's value over the ticks since the last take (None: no tick)."""
        with self._lock:
            out, self._values = self._values, [None] * len(self.programs)
        return out

    def close(self) -> None:
        """Stop bpftrace (it detaches its probes) and its readers."""
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
        self._reader.join(10)
        self._err.join(10)


@contextlib.contextmanager
def part_tracer(*programs: TraceProgram, timeout: float = 60.0) -> Iterator[PartTracer]:
    """A running :class:`PartTracer` of ``programs``, attached before the body runs; stopped
    after."""
    tracer = PartTracer(programs)
    try:
        tracer.wait_attached(timeout)
        yield tracer
    finally:
        tracer.close()
