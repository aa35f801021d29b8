"""One ``bpftrace`` child running the latency program, and the thread that reads it.

Safety: the tracer runs only as root, from the system directories (:mod:`iotop_plus.programs`),
under ``setpriv --pdeathsig KILL`` started from a thread that lives as long as the child, so
the child dies with us; :meth:`Tracer.close` kills it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from iotop_plus.programs import lookup_program, popen_held, release_group
from iotop_plus.sampling.latency.parser import TracerBatch, TracerParser
from iotop_plus.sampling.latency.program import (
    ISSUE_TRACEPOINTS,
    TICK_MS,
    TRACEFS,
    exits_present,
    jobs_present,
    rwbs_offsets,
    submit_tracepoint,
    tracer_program,
)

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.part import TraceProgram

GONE_WAIT_S = 1.0
"""How long a frame waits for the reader of a tracer that died to say why."""
MAX_PENDING_BATCHES = 2400
"""Batches kept while nobody reads frames (10 minutes at 4 a second), then the oldest go."""
MAP_KEYS_MAX = 16384
"""``BPFTRACE_MAP_KEYS_MAX``: requests in flight and buckets the child can hold."""
_HARMLESS = ("RLIMIT_MEMLOCK",)  # stderr lines bpftrace prints on every start (kernels >= 5.11)


class Tracer:
    """One bpftrace child and the thread that started it and reads its output."""

    def __init__(
        self,
        *,
        queue: bool,
        tick_ms: int = TICK_MS,
        tag: str = "",
        argv_prefix: tuple[str, ...] | None = None,
        map_keys: int = MAP_KEYS_MAX,
        issuers: bool = False,
        only_dev: int | None = None,
        marked: bool = False,
        errors: bool = False,
        attribution: bool = False,
        sample: int = 1,
        timed: bool = True,
        traced: Mapping[str, TraceProgram] | None = None,
    ) -> None:
        """Args:
        queue: Also trace ``block_rq_insert`` (the queue split); costs one more probe.
        timed: Time block requests (every block probe); False: only ``traced``'s probes.
        traced: The probes of the parts that trace, by part key (see
            :func:`~iotop_plus.sampling.latency.program.tracer_program`).
        marked: Frames mark their own ends (:meth:`mark`); needs :func:`marker_present`.
        errors: Count failed requests (``block_rq_error``); needs :func:`errors_present`.
        issuers: Count requests by issuer and time flush+writes apart (a probe's tracer);
            costs one more probe (see :func:`tracer_program`).
        only_dev: Trace only this kernel dev_t (a probe's device).
        attribution: Charge each request to the process and cgroup that submitted it (the
            frame's issuers); costs one more probe (see :func:`tracer_program`).
        sample: Time one request in this many (a power of two; see
            :func:`~iotop_plus.sampling.latency.program.sample_filter`).
        tick_ms: How often the child prints.
        tag: Text added to the program's first line (tests find their child by it).
        argv_prefix: ``[setpriv, --pdeathsig, KILL, --, bpftrace]`` override (tests).
        map_keys: Keys each map of the child holds (tests make it small).
        """
        self.queue = queue
        self.issuers = issuers
        self.only_dev = only_dev
        self.marked = marked
        self.errors = errors
        self.attribution = attribution
        self.sample = sample
        self.timed = timed
        self.traced: Mapping[str, TraceProgram] = MappingProxyType(dict(traced or {}))
        """The traced parts' programs, by key."""
        self.tick_ms = tick_ms
        self.tag = tag
        self._argv_prefix = argv_prefix
        self.map_keys = map_keys
        self._batches: collections.deque[TracerBatch] = collections.deque(
            maxlen=MAX_PENDING_BATCHES
        )
        self._lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self._arrived = threading.Condition(self._lock)
        self.ticks = 0
        self.last_end_ns = 0
        self.last_mark_ns = 0
        """When the child last printed for a marker syscall (CLOCK_MONOTONIC ns)."""
        """Ticks received so far (the first, partial one included)."""
        self.first_tick_ns: int | None = None
        """When the first tick ended: everything after it is traced whole."""
        self.attached = threading.Event()
        """Set once bpftrace said it attaches its probes."""
        self.ready = threading.Event()
        """Set at the first tick: the probes are surely attached, so later ticks are whole.
        That first tick covers the attaching and is dropped."""
        self.error: str | None = None
        """Why the child stopped or could not start (one line); None while it runs."""
        self.started_at: float | None = None

    @property
    def pid(self) -> int | None:
        """The child's pid (setpriv execs bpftrace, so the same process)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the child from a dedicated thread (returns at once)."""
        if self._thread is not None:
            return
        started = threading.Event()
        self.started_at = time.monotonic()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="iotop-plus-latency", daemon=True
        )
        self._thread.start()
        started.wait(10)

    def _argv(self) -> list[str]:
        prefix = self._argv_prefix
        if prefix is None:
            setpriv = lookup_program("setpriv").path or "setpriv"
            bpftrace = lookup_program("bpftrace").path or "bpftrace"
            prefix = (setpriv, "--pdeathsig", "KILL", "--", bpftrace)
        submit = submit_tracepoint() if self.issuers or self.attribution else ISSUE_TRACEPOINTS[0]
        program = tracer_program(
            queue=self.queue,
            tick_ms=self.tick_ms,
            tag=self.tag,
            issuers=self.issuers,
            submit=submit,
            only_dev=self.only_dev,
            marked=self.marked,
            errors=self.errors,
            attribution=self.attribution,
            rwbs_at=rwbs_offsets((submit, "block_rq_issue", "block_rq_complete"))
            if self.timed
            else None,
            exits=self.attribution and exits_present(),
            jobs=self.attribution and jobs_present(),
            sample=self.sample,
            timed=self.timed,
            traced=self.traced,
        )
        return [*prefix, "-f", "json", "-e", program]

    def _run(self, started: threading.Event) -> None:
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C",
            "BPFTRACE_MAP_KEYS_MAX": str(self.map_keys),
        }
        try:
            proc = popen_held(  # killed with iotop-plus, whatever thread is waiting on it
                self._argv(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=env,
            )
        except OSError as exc:
            self.error = f"cannot start bpftrace: {exc.strerror or exc}"
            started.set()
            return
        self._proc = proc
        started.set()
        threading.Thread(
            target=self._read_stderr, args=(proc,), name="iotop-plus-latency-err", daemon=True
        ).start()
        parser = TracerParser(self.traced)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                try:
                    batch = parser.feed(line)
                except ValueError as exc:
                    self.error = str(exc)
                    break
                if parser.attached:
                    self.attached.set()
                if batch is not None:
                    with self._arrived:
                        if self.first_tick_ns is None:
                            self.first_tick_ns = batch.end_ns
                        else:
                            self._batches.append(batch)
                        self.ticks += 1
                        self.last_end_ns = batch.end_ns
                        if batch.marked:
                            self.last_mark_ns = batch.end_ns
                        self._arrived.notify_all()
                    self.ready.set()
        finally:
            if self.error is not None:
                _kill(proc)
            with contextlib.suppress(ChildProcessError):  # (close() may have reaped it)
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
            release_group(proc.pid)
            code = proc.wait()
            if not self._closing and self.error is None:
                self.error = self._exit_reason(code)
            with self._arrived:
                self._arrived.notify_all()

    def _read_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            text = line.strip()
            if text and not any(h in text for h in _HARMLESS):
                self._stderr.append(text)

    def _exit_reason(self, code: int) -> str:
        if code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        last = [line for line in self._stderr if line.startswith("ERROR")] or list(self._stderr)
        detail = f": {last[0][:160]}" if last else ""
        if any("tracepoint not found" in line for line in self._stderr):
            detail += f" (is tracefs mounted? mount -t tracefs nodev {TRACEFS})"
        return f"latency tracer (bpftrace) {how}{detail}"

    def wait_tick(self, after_ns: int, timeout: float) -> bool:
        """Wait for a tick that ended at or after ``after_ns`` (CLOCK_MONOTONIC ns); False on
        timeout or failure. Frames read the disks right after one, so the histograms and the
        iostat figures cover the same interval."""
        with self._arrived:
            return (
                self._arrived.wait_for(
                    lambda: self.last_end_ns >= after_ns or self.error is not None, timeout
                )
                and self.error is None
            )

    def mark(self, timeout: float) -> bool:
        """Make the child print and clear its maps now, and wait up to ``timeout`` for it.

        The marker is ``kill(child, 0)`` (no signal is sent; the program catches the syscall).
        Returns False on timeout, or when the child is gone (then after its reader said why,
        so the frame reports the failure, not a partial interval) or not :attr:`marked`.
        """
        proc = self._proc
        if not self.marked or proc is None or self.error is not None:
            return False
        asked = time.monotonic_ns()
        try:
            if proc.poll() is not None:
                raise ProcessLookupError
            os.kill(proc.pid, 0)
        except OSError:
            self._wait_error(GONE_WAIT_S)
            return False
        with self._arrived:
            if self._arrived.wait_for(
                lambda: self.last_mark_ns >= asked or self.error is not None, timeout
            ):
                return self.error is None
        if proc.poll() is not None:  # died meanwhile: let its reader say why
            self._wait_error(GONE_WAIT_S)
        return False

    def _wait_error(self, timeout: float) -> None:
        with self._arrived:
            self._arrived.wait_for(lambda: self.error is not None, timeout)

    def take(self, until_ns: int) -> list[TracerBatch]:
        """Remove and return the batches that ended at or before ``until_ns``."""
        out = []
        with self._lock:
            while self._batches and self._batches[0].end_ns <= until_ns:
                out.append(self._batches.popleft())
        return out

    @property
    def alive(self) -> bool:
        """Whether the child is running."""
        return self._proc is not None and self._proc.poll() is None

    def close(self, timeout: float = 2.0) -> None:
        """Kill the child and wait for it and its thread."""
        self._closing = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            _kill(proc)
        if self._thread is not None:
            self._thread.join(timeout)


def _kill(proc: subprocess.Popen[str]) -> None:
    # SIGKILL: SIGTERM makes bpftrace print every map first, which can take a while. Its
    # whole group (its own session): nothing it started outlives it.
    with contextlib.suppress(OSError):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
