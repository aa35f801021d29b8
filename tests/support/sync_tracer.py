"""Runs frame parts' :class:`~iotop_plus.sampling.frame.part.TraceProgram`s through real bpftrace,
with a tick printer of its own, as the tracer does: every tick prints and clears each
program's maps and the ``parse`` of each program gets that tick's maps."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from iotop_plus.sampling.frame.part import TraceProgram
from iotop_plus.sampling.latency.generations import buffered_text, flush_lines, logical_name
from tests.support.wait import holds_within

MARKER = "// iotop-plus-part-test"


def require_bpftrace() -> None:
    """Skip the calling test, with the reason, when bpftrace cannot run here."""
    if os.geteuid() != 0:
        pytest.skip("needs root to trace")
    if not any(
        os.access(os.path.join(d, "bpftrace"), os.X_OK) for d in os.environ["PATH"].split(":")
    ):
        pytest.skip("bpftrace is not installed")


def program_text(programs: Sequence[TraceProgram], tick_ms: int) -> str:
    """The whole program: the parts' probes and a tick that prints and clears their maps,
    both as the tracer has them (:func:`buffered_text`, :func:`flush_lines`)."""
    maps = [m for p in programs for m in p.maps]
    lines = [
        MARKER,
        *(buffered_text(p.text, p.maps) for p in programs),
        f"interval:ms:{tick_ms} {{",
    ]
    lines += [*flush_lines(maps), '  printf("tick %llu\\n", nsecs);', "}"]
    return "\n".join(lines) + "\n"


class PartTracer:
    """One bpftrace child running ``programs``; :meth:`take` gives each program's merged value
    over the ticks since the last take."""

    def __init__(self, programs: Sequence[TraceProgram], tick_ms: int = 250) -> None:
        self.programs = tuple(programs)
        self.text = program_text(self.programs, tick_ms)
        self._lock = threading.Lock()
        self._values: list[object | None] = [None] * len(self.programs)
        self._tick: dict[str, dict[str, object]] = {}
        self.ticks = 0
        self.last_tick_ns = 0
        self.attached = False
        self.errors: list[str] = []
        self._proc = subprocess.Popen(
            ["bpftrace", "-f", "json", "-e", self.text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
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
            if not line.strip():
                continue
            doc: Any = json.loads(line)
            kind, data = doc.get("type"), doc.get("data")
            if kind == "attached_probes":
                self.attached = True
            elif kind == "map" and isinstance(data, dict):
                self._tick.update({logical_name(str(k)): v for k, v in data.items()})
            elif kind == "printf" and isinstance(data, str) and data.startswith("tick "):
                maps, self._tick = self._tick, {}
                with self._lock:
                    for i, program in enumerate(self.programs):
                        mine = {m: maps.get(m) or {} for m in program.maps}
                        value = program.parse(mine)
                        old = self._values[i]
                        self._values[i] = value if old is None else program.merge(old, value)
                    self.ticks += 1
                    self.last_tick_ns = int(data.split()[1])

    @property
    def pid(self) -> int:
        """The bpftrace child's pid."""
        return self._proc.pid

    def wait_attached(self, timeout: float = 60.0) -> None:
        """Wait until bpftrace attached its probes (and printed a first tick)."""
        ok = holds_within(
            lambda: (self.attached and self.ticks > 0) or self._proc.poll() is not None, timeout
        )
        if not ok or self._proc.poll() is not None:
            raise AssertionError(f"bpftrace did not start: {self.errors[-5:]}")

    def wait_tick_after(self, ns: int, timeout: float = 30.0) -> None:
        """Wait for a tick that ended after ``ns`` (CLOCK_MONOTONIC, as bpftrace's nsecs)."""
        if not holds_within(lambda: self.last_tick_ns > ns, timeout):
            raise AssertionError(f"no tick after {ns} in {timeout} s: {self.errors[-5:]}")

    def take(self) -> list[object | None]:
        """Each program's value over the ticks since the last take (None: no tick)."""
        with self._lock:
            out, self._values = self._values, [None] * len(self.programs)
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait(10)
        self._reader.join(5)
        self._err.join(5)

    def __enter__(self) -> PartTracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns, the clock of bpftrace's ``nsecs``."""
    return time.monotonic_ns()
