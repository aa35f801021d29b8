"""Per-device block latency from a ``bpftrace`` child on the block tracepoints.

The child runs :func:`tracer_program`: it stamps requests at ``block_rq_insert`` (only when
the queue split is wanted) and ``block_rq_issue``, and at ``block_rq_complete`` counts the
device time (issue to completion) into log-linear buckets keyed by
``(dev_t, rwbs, exp, sub)``. Every :data:`TICK_MS` it prints its maps as JSON lines
(``bpftrace -f json``), clears them and prints ``tick <nsecs>`` (CLOCK_MONOTONIC, the clock
of ``time.monotonic``). :class:`TracerParser` turns those lines into :class:`TracerBatch`es;
:class:`LatencyPart` hands each frame the batches that ended before it (the delta since the
previous frame), keyed by device name.

The tracer aligns to the frame, not the frame to its tick (REFERENCE.md, "One schedule"):
before each frame reads the disks, :meth:`LatencyPart.align` makes a marker syscall,
``kill(tracer_pid, 0)``, which the program catches at ``syscalls:sys_enter_kill`` (only ours:
filtered by our pid and signal 0) to print and clear its maps at once and say
``mark <nsecs>``. The frame waits at most :data:`MARK_WAIT_S` for that, else its latency is
``partial`` (it ends at the last output; the rest goes to the next frame). Where the kernel has
no syscall tracepoints, frames wait for the next tick as before.

A probe's tracer (``issuers=True``) also says who issued the requests and keeps writes that
carry a preflush or FUA apart (:func:`tracer_program`).

Safety: the tracer runs only as root, from the system directories (:mod:`iotop_plus.programs`),
under ``setpriv --pdeathsig KILL`` started from a thread that lives as long as the child, so
the child dies with us (REFERENCE.md, "Parent-death signal"); :meth:`Tracer.close` kills it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.programs import lookup_program
from iotop_plus.sampling.latency_hist import (
    FAILED,
    RUNNING,
    STARTING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
    bucket_index,
)

TICK_MS = 250
"""How often the child prints and clears its maps on its own (frames mark their own ends)."""
MARK_WAIT_S = 0.05
"""How long a frame waits for the tracer's output after its marker syscall (then: partial)."""
GONE_WAIT_S = 1.0
"""How long a frame waits for the reader of a tracer that died to say why."""
MAX_PENDING_BATCHES = 2400
"""Batches kept while nobody reads frames (10 minutes at 4 a second), then the oldest go."""
ALIGN_SLACK_NS = 20_000_000
"""A tick this recent (20 ms) ends the interval; otherwise a frame waits for the next one."""
MAP_KEYS_MAX = 16384
"""``BPFTRACE_MAP_KEYS_MAX``: requests in flight and buckets the child can hold."""
BLIND_RATIO = 0.7
"""A tracer that counts fewer than this share of the completions the disks report..."""
BLIND_MIN_IOS = 500
"""...over a frame with at least this many completions..."""
BLIND_FRAMES = 2
"""...this many frames in a row has a full stamp map (see :class:`BlindWatch`): restart it."""
TRACEFS = "/sys/kernel/tracing"
"""Where tracefs is mounted when it is missing."""
_EVENT_DIRS = (f"{TRACEFS}/events/block", "/sys/kernel/debug/tracing/events/block")
MARK_TRACEPOINT = "syscalls/sys_enter_kill"
"""Where the program catches the frame's marker syscall (``kill(tracer_pid, 0)``)."""
MARKER = "iotop-plus-latency"
"""First-line comment of the program: ``pgrep -f`` finds our tracers by it."""
_HARMLESS = ("RLIMIT_MEMLOCK",)  # stderr lines bpftrace prints on every start (kernels >= 5.11)

_BUCKET = """    $e = 0; $x = $v;
    if ($x >= 4294967296) { $x = $x >> 32; $e = $e + 32; }
    if ($x >= 65536) { $x = $x >> 16; $e = $e + 16; }
    if ($x >= 256) { $x = $x >> 8; $e = $e + 8; }
    if ($x >= 16) { $x = $x >> 4; $e = $e + 4; }
    if ($x >= 4) { $x = $x >> 2; $e = $e + 2; }
    if ($x >= 2) { $e = $e + 1; }
    $s = $e >= 3 ? ($v >> ($e - 3)) & 7 : 0;
"""


FLUSH_WRITE = "flush+write"
"""The operation of writes that carry a preflush or FUA (a filesystem's journal commits, the
empty write each fsync of a raw device sends), timed from submission to the end of the
kernel's whole flush sequence; only a tracer with ``issuers`` keeps them apart."""
ISSUE_TRACEPOINTS = ("block_io_start", "block_bio_queue")
"""Tracepoints that run in the submitting task's context, newest kernels' first: bpftrace's
``pid`` and ``comm`` name the issuer (``block_io_start`` since Linux 6.5)."""


def tracer_program(
    *,
    queue: bool,
    tick_ms: int = TICK_MS,
    tag: str = "",
    issuers: bool = False,
    submit: str = ISSUE_TRACEPOINTS[0],
    only_dev: int | None = None,
    marked: bool = False,
) -> str:
    """The bpftrace program (its first line carries :data:`MARKER`, our pid and ``tag``).

    ``marked``: our ``kill(pid, 0)`` (signal 0 from this process, see :meth:`Tracer.mark`)
    also prints and clears the maps, ending with ``mark <nsecs>`` instead of ``tick``.

    ``only_dev`` (a kernel dev_t) keeps every block probe to that device (a probe's tracer:
    a loop device's backing I/O costs nothing then).

    With ``issuers`` (a probe's tracer) it also counts requests by issuer at ``submit`` (one
    of :data:`ISSUE_TRACEPOINTS`) into ``@who[dev, pid, comm]``, and times writes that carry
    a preflush or FUA apart (:data:`FLUSH_WRITE`: ``@fh``, ``@fs``, ``@fm``). Seen on Linux
    6.18: rwbs at submission still has the flags (``FWS`` is an fsync's empty preflush write,
    ``FWFSM`` a journal commit; ``WF...`` is FUA alone), while at issue and completion the
    kernel has stripped what it sends as separate flushes (``FF``, whose completion reports
    sector -1). Such a write completes once with its data and once more, with no sectors, at
    the end of its flush sequence; a FUA-only write on a device that honours FUA completes
    once, FUA still set. Those completions end the timing; every completion of such a write
    is kept out of the plain writes. Flushes are not stamped at issue (no sectors): their
    stamp at sector 0 would time the empty write that completes there.
    """
    lines = [f"// {MARKER} pid={os.getpid()} {tag}".rstrip()]
    only = f" /args->dev == {int(only_dev)}/" if only_dev is not None else ""
    if queue:
        lines.append(
            f"tracepoint:block:block_rq_insert{only} {{ @iq[args->dev, args->sector] = nsecs; }}"
        )
    if issuers:
        lines += [
            f"tracepoint:block:{submit}{only} {{",
            "  @who[args->dev, pid, comm] = count();",
            '  if (strncmp(args->rwbs, "FW", 2) == 0) {',
            "    @fw[args->dev, args->sector] = (nsecs << 1) | 1;",
            '  } else if (strncmp(args->rwbs, "WF", 2) == 0) {',
            "    @fw[args->dev, args->sector] = nsecs << 1;",
            "  }",
            "}",
        ]
    lines.append(f"tracepoint:block:block_rq_issue{only} {{")
    if issuers:
        lines.append("  if (args->nr_sector) { @is[args->dev, args->sector] = nsecs; }")
    else:
        lines.append("  @is[args->dev, args->sector] = nsecs;")
    if queue:
        lines += [
            "  $t = @iq[args->dev, args->sector];",
            "  if ($t) {",
            "    delete(@iq[args->dev, args->sector]);",
            "    @qs[args->dev, args->rwbs] = sum(nsecs - $t);",
            "    @qn[args->dev, args->rwbs] = count();",
            "  }",
        ]
    lines += [
        "}",
        f"tracepoint:block:block_rq_complete{only} {{",
        "  $t = @is[args->dev, args->sector];",
    ]
    plain = "  if ($t) {"
    if issuers:
        lines += [
            "  $w = @fw[args->dev, args->sector];",
            "  if ($w) {",
            "    if ($t) { delete(@is[args->dev, args->sector]); }",
            "    if (args->nr_sector == 0 ||",
            '        (($w & 1) == 0 && strncmp(args->rwbs, "WF", 2) == 0)) {',
            "      delete(@fw[args->dev, args->sector]);",
            "      $v = nsecs - ($w >> 1);",
            _BUCKET.rstrip("\n"),
            "      @fh[args->dev, $e, $s] = count();",
            "      @fs[args->dev] = sum($v);",
            "      @fm[args->dev] = max($v);",
            "    }",
        ]
        plain = "  } else if ($t) {"
    lines += [
        plain,
        "    delete(@is[args->dev, args->sector]);",
        "    $v = nsecs - $t;",
        _BUCKET.rstrip("\n"),
        "    @h[args->dev, args->rwbs, $e, $s] = count();",
        "    @ds[args->dev, args->rwbs] = sum($v);",
        "    @dm[args->dev, args->rwbs] = max($v);",
        "  }",
        "}",
        f"interval:ms:{int(tick_ms)} {{",
    ]
    maps = [
        "@h",
        "@ds",
        "@dm",
        *(["@qs", "@qn"] if queue else []),
        *(["@who", "@fh", "@fs", "@fm"] if issuers else []),
    ]
    lines += [f"  print({m}); clear({m});" for m in maps]
    lines += ['  printf("tick %llu\\n", nsecs);', "}"]
    if marked:
        lines.append(
            f"tracepoint:{MARK_TRACEPOINT.replace('/', ':')}"
            f" /pid == {os.getpid()} && args->sig == 0/ {{"
        )
        lines += [f"  print({m}); clear({m});" for m in maps]
        lines += ['  printf("mark %llu\\n", nsecs);', "}"]
    # At exit bpftrace prints every map; the parser ignores anything after the last tick.
    return "\n".join(lines) + "\n"


def op_of(rwbs: str) -> str | None:
    """The operation of a request from its ``rwbs`` flags (kernel ``blk_fill_rwbs``).

    A leading ``F`` is a preflush: ``FWS`` is a write, while ``F`` or ``FF`` alone is a flush.
    ``N`` (no data: zone ops, driver-private) is dropped.
    """
    if not rwbs:
        return None
    head = rwbs[0]
    if head == "F":
        if len(rwbs) > 1 and rwbs[1] in "RWD":
            head = rwbs[1]
        else:
            return "flush"
    return {"R": "read", "W": "write", "D": "discard"}.get(head)


@dataclass
class _OpAcc:
    buckets: dict[int, int] = field(default_factory=dict)
    sum_ns: int = 0
    max_ns: int = 0
    queue_sum_ns: int = 0
    queue_count: int = 0

    def frozen(self) -> OpLatency:
        hist = Histogram(MappingProxyType(dict(self.buckets)), self.sum_ns, self.max_ns)
        return OpLatency(hist, self.queue_sum_ns, self.queue_count)


@dataclass(frozen=True)
class TracerBatch:
    """What the child counted over one tick."""

    end_ns: int
    """CLOCK_MONOTONIC ns when the tick's maps were printed (the end of what it covers)."""
    ops: Mapping[tuple[int, str], OpLatency]
    """Per (kernel dev_t, operation)."""
    issuers: Mapping[tuple[int, int, str], int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Requests submitted per (kernel dev_t, pid, comm): a probe's tracer only."""
    marked: bool = False
    """Printed for a frame's marker syscall (``mark``), not by the child's own tick."""


class TracerParser:
    """Turns ``bpftrace -f json`` lines of :func:`tracer_program` into batches.

    Accepted lines: blank lines (bpftrace prints several), ``{"type": "attached_probes"}``,
    ``{"type": "map", "data": {"@name": {"k1,k2,...": value}}}``, ``{"type": "hist", ...}``
    (ignored), ``{"type": "printf", "data": "tick N\\n"}`` or ``"mark N\\n"`` (ends a batch, marked
    for a frame); anything else that
    is JSON is ignored, and a line that is not JSON raises ``ValueError`` quoting it. Keys:
    ``dev,rwbs,exp,sub`` (``@h``), ``dev,rwbs`` (``@ds``, ``@dm``, ``@qs``, ``@qn``),
    ``dev,exp,sub`` (``@fh``), ``dev`` (``@fs``, ``@fm``) and ``dev,pid,comm`` (``@who``;
    a comm may itself hold commas).
    """

    def __init__(self) -> None:
        self.attached = False
        """True once bpftrace said its probes are attached."""
        self._acc: dict[tuple[int, str], _OpAcc] = {}
        self._who: dict[tuple[int, int, str], int] = {}

    def feed(self, line: str) -> TracerBatch | None:
        """Take one line; returns a batch when the line ended a tick."""
        text = line.strip()
        if not text:
            return None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"tracer printed something that is not JSON: {text[:120]!r}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"tracer printed unexpected JSON: {text[:120]!r}")
        kind = doc.get("type")
        data = doc.get("data")
        if kind == "attached_probes":
            self.attached = True
        elif kind == "map" and isinstance(data, dict):
            for name, values in data.items():
                if isinstance(values, dict):
                    self._map(name, values)
        elif kind == "printf" and isinstance(data, str) and data.startswith(("tick ", "mark ")):
            try:
                end_ns = int(data.split()[1])
            except (IndexError, ValueError):
                raise ValueError(f"bad tick line from the tracer: {data[:80]!r}") from None
            acc, self._acc = self._acc, {}
            who, self._who = self._who, {}
            return TracerBatch(
                end_ns,
                MappingProxyType({k: a.frozen() for k, a in acc.items()}),
                MappingProxyType(who),
                marked=data.startswith("mark "),
            )
        return None

    def _map(self, name: str, values: Mapping[str, object]) -> None:
        if name in ("@who", "@fh", "@fs", "@fm"):
            self._probe_map(name, values)
            return
        if name not in ("@h", "@ds", "@dm", "@qs", "@qn"):
            return
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            parts = key.split(",")
            try:
                dev = int(parts[0])
                op = op_of(parts[1])
                if op is None:
                    continue
                acc = self._acc.setdefault((dev, op), _OpAcc())
                if name == "@h":
                    idx = bucket_index(int(parts[2]), int(parts[3]))
                    acc.buckets[idx] = acc.buckets.get(idx, 0) + value
                elif name == "@ds":
                    acc.sum_ns += value
                elif name == "@dm":
                    acc.max_ns = max(acc.max_ns, value)
                elif name == "@qs":
                    acc.queue_sum_ns += value
                else:
                    acc.queue_count += value
            except (IndexError, ValueError):
                raise ValueError(f"bad {name} key from the tracer: {key[:80]!r}") from None

    def _probe_map(self, name: str, values: Mapping[str, object]) -> None:
        """The maps of a probe's tracer: issuers and the flush+write timings."""
        for key, value in values.items():
            if not isinstance(value, int):
                continue
            try:
                if name == "@who":
                    dev, pid, comm = key.split(",", 2)
                    who = (int(dev), int(pid), comm)
                    self._who[who] = self._who.get(who, 0) + value
                    continue
                parts = key.split(",")
                acc = self._acc.setdefault((int(parts[0]), FLUSH_WRITE), _OpAcc())
                if name == "@fh":
                    idx = bucket_index(int(parts[1]), int(parts[2]))
                    acc.buckets[idx] = acc.buckets.get(idx, 0) + value
                elif name == "@fs":
                    acc.sum_ns += value
                else:
                    acc.max_ns = max(acc.max_ns, value)
            except (IndexError, ValueError):
                raise ValueError(f"bad {name} key from the tracer: {key[:80]!r}") from None


def dev_t(major: int, minor: int) -> int:
    """The kernel's internal dev_t, as tracepoints report it: ``(major << 20) | minor``."""
    return (major << 20) | minor


def _tracepoints_present() -> bool:
    return any(os.path.isdir(os.path.join(d, "block_rq_issue")) for d in _EVENT_DIRS)


def marker_present() -> bool:
    """Whether the kernel has :data:`MARK_TRACEPOINT` (syscall tracepoints), so frames can
    mark their own ends; without it they wait for the tracer's next tick."""
    return any(os.path.isdir(os.path.join(d, "..", MARK_TRACEPOINT)) for d in _EVENT_DIRS)


def submit_tracepoint() -> str:
    """The first of :data:`ISSUE_TRACEPOINTS` this kernel has (``block_bio_queue`` when it
    cannot tell: every kernel bpftrace runs on has that one)."""
    for name in ISSUE_TRACEPOINTS:
        if any(os.path.isdir(os.path.join(d, name)) for d in _EVENT_DIRS):
            return name
    return ISSUE_TRACEPOINTS[-1]


def tracer_problem() -> tuple[str | None, str | None]:
    """Why the tracer cannot run here (one line), and a one-time notice; (None, ...) when it can.

    Mounts tracefs at :data:`TRACEFS` when the block tracepoints are not visible (as root).
    """
    if os.geteuid() != 0:
        return "latency needs root (it runs bpftrace): start iotop-plus as root", None
    bpftrace = lookup_program("bpftrace")
    if bpftrace.path is None:
        return bpftrace.missing("install it with: apt-get install bpftrace"), None
    setpriv = lookup_program("setpriv")
    if setpriv.path is None:
        return setpriv.missing("install it with: apt-get install util-linux"), None
    if _tracepoints_present():
        return None, None
    mount = lookup_program("mount")
    command = f"mount -t tracefs nodev {TRACEFS}"
    if mount.path is not None:
        done = subprocess.run(
            [mount.path, "-t", "tracefs", "nodev", TRACEFS],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if done.returncode == 0 and _tracepoints_present():
            return None, f"mounted tracefs at {TRACEFS} (the block tracepoints need it)"
    return (
        f"block tracepoints not found (tracefs not mounted?): run as root: {command}",
        None,
    )


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
    ) -> None:
        """Args:
        queue: Also trace ``block_rq_insert`` (the queue split); costs one more probe.
        marked: Frames mark their own ends (:meth:`mark`); needs :func:`marker_present`.
        issuers: Count requests by issuer and time flush+writes apart (a probe's tracer);
            costs one more probe (see :func:`tracer_program`).
        only_dev: Trace only this kernel dev_t (a probe's device).
        tick_ms: How often the child prints.
        tag: Text added to the program's first line (tests find their child by it).
        argv_prefix: ``[setpriv, --pdeathsig, KILL, --, bpftrace]`` override (tests).
        map_keys: Keys each map of the child holds (tests make it small).
        """
        self.queue = queue
        self.issuers = issuers
        self.only_dev = only_dev
        self.marked = marked
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
        program = tracer_program(
            queue=self.queue,
            tick_ms=self.tick_ms,
            tag=self.tag,
            issuers=self.issuers,
            submit=submit_tracepoint() if self.issuers else ISSUE_TRACEPOINTS[0],
            only_dev=self.only_dev,
            marked=self.marked,
        )
        return [*prefix, "-f", "json", "-e", program]

    def _run(self, started: threading.Event) -> None:
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C",
            "BPFTRACE_MAP_KEYS_MAX": str(self.map_keys),
        }
        try:
            proc = subprocess.Popen(
                self._argv(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=env,
                start_new_session=True,  # the terminal's ^C is ours to handle, not the child's
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
        parser = TracerParser()
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
    # SIGKILL: SIGTERM makes bpftrace print every map first, which can take a while.
    with contextlib.suppress(OSError):
        proc.kill()


def _names_by_dev(counters: Mapping[str, object]) -> dict[int, str]:
    out: dict[int, str] = {}
    for name, c in counters.items():
        major, minor = getattr(c, "major", None), getattr(c, "minor", None)
        if isinstance(major, int) and isinstance(minor, int):
            out[dev_t(major, minor)] = name
    return out


class BlindWatch:
    """Notices a tracer gone blind because its map of request stamps is full.

    The kernel skips a tracepoint's BPF program when it fires in an interrupt while another
    BPF program runs on the same CPU, so a few completions are never seen (about 0.1 % of
    them on a busy loop device over a virtio disk here) and their issue stamps stay in the
    map. On a large disk their sectors rarely come back, so after minutes of heavy random I/O
    the map is full and new requests go unstamped: the figures would quietly cover fewer and
    fewer requests. bpftrace 0.17 cannot clear a map that probes delete from (it aborts), so
    the cure is a new tracer, and this watch says when: when the devices that were traced
    report many more completions (``/proc/diskstats``) than the tracer saw, frame after
    frame. Devices never traced (bio-based dm and md, partitions) do not count.
    """

    def __init__(self) -> None:
        self._prev: dict[str, int] = {}
        self._traced: set[str] = set()
        self._strikes = 0

    def blind(self, counters: Mapping[str, object], seen: Mapping[str, int]) -> bool:
        """Take one frame: ``counters`` (cumulative disk counters by name) and ``seen`` (reads
        and writes the tracer counted per name); True when the tracer should be restarted."""
        completed = traced = 0
        for name, c in counters.items():
            reads, writes = getattr(c, "reads", None), getattr(c, "writes", None)
            if not isinstance(reads, int) or not isinstance(writes, int):
                continue
            now, before = reads + writes, self._prev.get(name)
            self._prev[name] = now
            got = seen.get(name, 0)
            if got:
                self._traced.add(name)
            if before is not None and name in self._traced and now >= before:
                completed += now - before
                traced += got
        short = completed >= BLIND_MIN_IOS and traced < BLIND_RATIO * completed
        self._strikes = self._strikes + 1 if short else 0
        return self._strikes >= BLIND_FRAMES


class LatencyPart:
    """The latency part of :class:`~iotop_plus.sampling.frame.LiveSource`'s frames."""

    def __init__(
        self,
        *,
        queue: bool = True,
        make_tracer: Callable[[], Tracer] | None = None,
        check: Callable[[], tuple[str | None, str | None]] = tracer_problem,
        issuers: bool = False,
        only_dev: int | None = None,
    ) -> None:
        """Args:
        queue: Trace the queue split too (``block_rq_insert``).
        make_tracer: Builds the tracer (tests); default a :class:`Tracer`.
        check: The preflight (root, bpftrace, tracepoints); tests inject one.
        issuers: A probe's tracer: devices' latency carries their issuers and flush+writes.
        only_dev: Trace only this kernel dev_t (a probe's device).
        """
        self.queue = queue
        self._make_tracer = make_tracer or (
            lambda: Tracer(
                queue=queue,
                issuers=issuers,
                only_dev=only_dev,
                marked=not issuers and marker_present(),  # a probe's tracer: its own ticks
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
            return LatencyFrame(FAILED, status=self._problem, notice=notice)
        batches = tracer.take(int(monotonic * 1e9))
        if not batches:
            if tracer.error is not None:
                return LatencyFrame(FAILED, status=tracer.error, notice=notice)
            if not tracer.ready.is_set():
                return LatencyFrame(STARTING, status="starting tracer…", notice=notice)
        names = _names_by_dev(counters)
        merged: dict[str, dict[str, OpLatency]] = {}
        who: dict[str, dict[tuple[int, str], int]] = {}
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
        start_ns = self._last_end_ns
        if start_ns is None:  # traced whole from the first (dropped) tick on
            start_ns = tracer.first_tick_ns
            if start_ns is None and batches:
                start_ns = batches[0].end_ns - tracer.tick_ms * 1_000_000
            self._last_end_ns = start_ns
        if batches:
            self._last_end_ns = batches[-1].end_ns
        end_ns = self._last_end_ns
        span = (end_ns - start_ns) / 1e9 if start_ns is not None and end_ns is not None else 0.0
        devices = {
            n: DeviceLatency(MappingProxyType(merged.get(n, {})), MappingProxyType(who.get(n, {})))
            for n in merged.keys() | who.keys()
        }
        status = tracer.error  # died after this frame's batches: say so now
        seen = {
            n: d.op("read").count + d.op("write").count + d.op(FLUSH_WRITE).count
            for n, d in devices.items()
        }
        if status is None and self._watch.blind(counters, seen):
            self._restart()
            notice = (
                "latency tracer restarted: its map of requests in flight had filled up with "
                "completions the kernel did not report"
            )
        partial, self._partial = self._partial and not status, False
        return LatencyFrame(
            FAILED if status else RUNNING,
            MappingProxyType(devices),
            status=status,
            span_s=span,
            notice=notice,
            partial=partial,
        )

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
