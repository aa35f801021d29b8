"""Run fio for asyncio callers: live progress, cancel, cleanup, plain failures.

fio runs in its own session (``start_new_session``) so that cancelling kills its whole
process group, and so that a terminal's Ctrl-C reaches us first, not fio's job processes.
It is started as ``setpriv --pdeathsig KILL -- fio ... --thread`` by a thread that lives
exactly as long as fio: ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child
exits, so fio dies with us even on SIGKILL, and ``--thread`` keeps its jobs in its process.
fio never gets a name to resolve: only ``/proc/self/fd/N`` paths of a checked target
(:class:`~iotop_plus.probe.target.CheckedTarget`).
With ``--output-format=json --status-interval=1`` fio prints one whole cumulative JSON
document per second, possibly after text lines such as ``note: ...`` or
``fio: pid=..., err=...``; :class:`JsonDocumentStream` splits them as they arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iotop_plus.probe.block_latency import (
    ProbeTracer,
    flush_write_of,
    issuers_of,
    with_block_latency,
)
from iotop_plus.probe.fioproc import FioProcess
from iotop_plus.probe.presets import DEFAULT_ENGINE, FALLBACK_ENGINE, Preset, ProbeParams
from iotop_plus.probe.results import (
    FioOutputError,
    ProbeResult,
    cpu_pressure_pct,
    job_errors,
    parse_result,
)
from iotop_plus.probe.target import (
    CheckedTarget,
    ProbeTarget,
    TargetError,
    open_target,
    remove_all_probe_files,
)
from iotop_plus.programs import lookup_program
from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import (
    IO_TICKS,
    MAX_ATTRIBUTE_BYTES,
    READ_MS,
    READS,
    READS_MERGED,
    TIME_IN_QUEUE,
    WRITE_MS,
    WRITES,
    WRITES_MERGED,
    DiskCounters,
    counter_deltas,
    parse_sys_stat,
    read_bounded,
)
from iotop_plus.sampling.pressure import read_pressure_file

INSTALL_HINT = "install it with `apt-get install fio` (Debian/Ubuntu) or `dnf install fio`"

# errnos with which a job fails when io_uring cannot be used: EPERM (sysctl
# kernel.io_uring_disabled, seccomp), ENOSYS (kernel without it), EOPNOTSUPP.
_IO_URING_UNAVAILABLE = {1, 38, 95}


class ProbeError(Exception):
    """A probe failed; the message is one plain line for the user."""


@dataclass(frozen=True)
class ProbeRequest:
    """What the user asked to run."""

    preset: Preset
    """The pattern."""
    params: ProbeParams
    """The parameters, after the user's edits."""
    target: str
    """A directory or a block device path, as typed."""
    confirm: str | None = None
    """The device name typed to confirm a write probe on a raw device."""


@dataclass(frozen=True)
class ProbeProgress:
    """One live status report from fio (every second)."""

    elapsed_s: float
    """Seconds since the job started."""
    runtime_s: float
    """Seconds the job is set to run."""
    read_iops: float
    """Reads per second over the last report interval."""
    write_iops: float
    """Writes per second over the last report interval."""
    read_kib_s: float
    """Read KiB/s over the last report interval."""
    write_kib_s: float
    """Write KiB/s over the last report interval."""
    mean_lat_us: float
    """Mean completion latency of the I/Os in the last report interval."""
    engine: str
    """The engine running."""

    @property
    def iops(self) -> float:
        """Reads plus writes per second."""
        return self.read_iops + self.write_iops

    @property
    def kib_s(self) -> float:
        """Read plus write KiB/s."""
        return self.read_kib_s + self.write_kib_s

    @property
    def time_left_s(self) -> float:
        """Seconds until the runtime is up."""
        return max(0.0, self.runtime_s - self.elapsed_s)

    @property
    def fraction(self) -> float:
        """Share of the runtime done, 0 to 1."""
        return min(1.0, self.elapsed_s / self.runtime_s) if self.runtime_s else 0.0


@dataclass(frozen=True)
class ProbeOutcome:
    """A finished probe: the parsed result and fio's own words."""

    result: ProbeResult
    """The parsed figures, hints and placement."""
    raw_json: str
    """fio's final JSON document, as printed."""
    argv: tuple[str, ...]
    """The fio command line run (the last attempt)."""
    target: ProbeTarget
    """The checked target."""


@dataclass
class JsonDocumentStream:
    """Splits fio's stdout into whole JSON documents and the text between them."""

    buffer: str = ""
    """Text received and not yet consumed."""
    text: list[str] = field(default_factory=list)
    """Non-JSON lines seen (notes, error lines)."""
    _decoder: json.JSONDecoder = field(default_factory=json.JSONDecoder)

    def feed(self, chunk: str) -> list[tuple[str, Any]]:
        """Add output; returns the (raw text, document) pairs completed by it."""
        self.buffer += chunk
        docs: list[tuple[str, Any]] = []
        while True:
            start = self._doc_start()
            if start is None:
                # Keep a partial last line: it may be the start of a document.
                head, sep, tail = self.buffer.rpartition("\n")
                if sep:
                    self._text(head)
                    self.buffer = tail
                return docs
            if start:
                self._text(self.buffer[:start])
                self.buffer = self.buffer[start:]
            try:
                doc, end = self._decoder.raw_decode(self.buffer)
            except json.JSONDecodeError:
                return docs  # incomplete: wait for more
            docs.append((self.buffer[:end], doc))
            self.buffer = self.buffer[end:].lstrip("\n")

    def finish(self) -> str:
        """Everything left over at the end of output (garbage when not blank)."""
        rest, self.buffer = self.buffer, ""
        self._text(rest)
        return rest.strip()

    def _doc_start(self) -> int | None:
        # fio starts each document with "{" at the beginning of a line.
        if self.buffer.startswith("{"):
            return 0
        pos = self.buffer.find("\n{")
        return None if pos < 0 else pos + 1

    def _text(self, text: str) -> None:
        self.text += [line for line in text.splitlines() if line.strip()]


def io_uring_disabled(roots: Roots) -> bool:
    """Whether sysctl ``kernel.io_uring_disabled`` keeps this process from io_uring."""
    try:
        value = int((roots.proc / "sys" / "kernel" / "io_uring_disabled").read_text())
    except (OSError, ValueError):
        return False
    # 1 allows privileged processes (and the io_uring_group); 2 allows nobody.
    return value == 2 or (value == 1 and os.geteuid() != 0)


def build_argv(
    fio: str, preset: Preset, params: ProbeParams, target: ProbeTarget, filename: Path | str
) -> list[str]:
    """fio's argv for one run (never a shell string).

    ``filename`` is a ``/proc/self/fd/N`` path; the description names the target for ``ps``.
    """
    argv = [
        fio,
        f"--name={preset.name}",
        f"--description=iotop-plus probe on {target.label}",
        f"--filename={filename}",
        f"--rw={preset.rw}",
        f"--bs={params.bs}",
        f"--iodepth={params.iodepth}",
        f"--numjobs={params.numjobs}",
        f"--ioengine={params.ioengine}",
        f"--direct={int(params.direct)}",
        f"--size={target.size_bytes}",
        f"--runtime={params.runtime_s}",
        "--time_based",
        "--group_reporting",
        # Jobs as threads of one process: fio's forked job processes call setsid(), so
        # only threads die for certain with fio when a probe is cancelled.
        "--thread",
        "--randrepeat=0",
        "--output-format=json",
        "--status-interval=1",
    ]
    if preset.rwmixread is not None:
        argv.append(f"--rwmixread={preset.rwmixread}")
    if preset.fsync:
        argv.append(f"--fsync={preset.fsync}")
    if target.readonly:
        argv.append("--readonly")
    return argv


def progress_from(
    doc: Any, previous: Any | None, runtime_s: float, engine: str
) -> ProbeProgress | None:
    """Live figures from two consecutive cumulative status documents (None if unusable)."""
    try:
        job = doc["jobs"][0]
        elapsed = float(job["elapsed"])
        now_ms = float(doc["timestamp_ms"])
        prev_job = previous["jobs"][0] if previous is not None else None
        prev_ms = float(previous["timestamp_ms"]) if previous is not None else None
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    figures: dict[str, float] = {}
    lat_sum = lat_n = 0.0
    for direction in ("read", "write"):
        cur = job.get(direction) or {}
        old = (prev_job or {}).get(direction) or {}
        ios = float(cur.get("total_ios", 0)) - float(old.get("total_ios", 0))
        kib = (float(cur.get("io_bytes", 0)) - float(old.get("io_bytes", 0))) / 1024
        if prev_ms is not None and now_ms > prev_ms:
            seconds = (now_ms - prev_ms) / 1000
        else:
            seconds = max(float(cur.get("runtime", 0)) / 1000, 1e-3)
        figures[direction + "_iops"] = max(0.0, ios / seconds)
        figures[direction + "_kib"] = max(0.0, kib / seconds)
        clat, old_clat = cur.get("clat_ns") or {}, old.get("clat_ns") or {}
        n, old_n = float(clat.get("N", 0)), float(old_clat.get("N", 0))
        total = float(clat.get("mean", 0)) * n - float(old_clat.get("mean", 0)) * old_n
        if n > old_n:
            lat_sum += total
            lat_n += n - old_n
    return ProbeProgress(
        elapsed_s=elapsed,
        runtime_s=runtime_s,
        read_iops=figures["read_iops"],
        write_iops=figures["write_iops"],
        read_kib_s=figures["read_kib"],
        write_kib_s=figures["write_kib"],
        mean_lat_us=(lat_sum / lat_n / 1000) if lat_n else 0.0,
        engine=engine,
    )


@dataclass(frozen=True)
class _FioRun:
    returncode: int
    docs: tuple[tuple[str, Any], ...]
    text: tuple[str, ...]
    stderr: str
    garbage: str
    pid: int | None = None
    """fio's pid (setpriv execs it): the issuer of its requests."""


class ProbeRunner:
    """Runs probes with fio; one ``run`` at a time per caller.

    Cancel a probe by cancelling the task awaiting :meth:`run`: fio's process group is
    killed and the probe directory removed before the cancellation propagates.

    While fio runs, the block tracer (:class:`~iotop_plus.probe.block_latency.ProbeTracer`)
    times the target device's requests, so results carry the device-side percentiles next
    to fio's; it is started per run, or once for the runs inside :meth:`tracing`.
    """

    def __init__(
        self,
        roots: Roots,
        fio: str | None = None,
        *,
        trace: bool = True,
        make_tracer: Callable[[], ProbeTracer] | None = None,
    ) -> None:
        """Args:
        roots: where to read sysfs/procfs (target checks, io_uring sysctl).
        fio: fio's path; default: looked up when a probe starts (:mod:`iotop_plus.programs`:
            as root only system directories, PATH otherwise).
        trace: Time the device side of each probe with the block tracer (root, bpftrace).
        make_tracer: Builds the tracer (tests).
        """
        self.roots = roots
        self.fio = fio
        self.trace = trace
        self._make_tracer = make_tracer or (lambda: ProbeTracer(roots))
        self._tracer: ProbeTracer | None = None
        self._kept = 0

    @contextlib.contextmanager
    def tracing(self) -> Iterator[None]:
        """Keep one block tracer over the runs inside (a sweep's steps, an A/B's rounds):
        it attaches once instead of before every run."""
        self._kept += 1
        try:
            yield
        finally:
            self._kept -= 1
            if not self._kept:
                self.close_tracer()

    def close_tracer(self) -> None:
        """Kill the block tracer, if one runs."""
        tracer, self._tracer = self._tracer, None
        if tracer is not None:
            tracer.close()

    async def _begin_trace(self, target: ProbeTarget) -> bool:
        if not self.trace or target.device is None:
            return False
        if self._tracer is None:
            self._tracer = self._make_tracer()
        return await asyncio.to_thread(self._tracer.begin, target.device)

    def find_fio(self) -> str:
        """fio's path.

        Raises:
            ProbeError: fio is not installed, with where it was looked for and the install
            command.
        """
        if self.fio:
            return self.fio
        found = lookup_program("fio")
        if found.path is None:
            raise ProbeError(found.missing(INSTALL_HINT))
        return found.path

    async def run(
        self,
        request: ProbeRequest,
        on_progress: Callable[[ProbeProgress], object] | None = None,
        on_start: Callable[[ProbeTarget], object] | None = None,
    ) -> ProbeOutcome:
        """Run one probe to the end.

        The target is checked and opened in a worker thread (blkid may take seconds), then
        held open until fio is gone.

        Raises:
            ProbeError: one plain line (``TargetError`` for refused targets).
            asyncio.CancelledError: when cancelled, after cleaning up.
        """
        checked = await _open_in_thread(request, self.roots)
        try:
            with checked:
                return await self._run_checked(request, checked, on_progress, on_start)
        finally:
            if not self._kept:
                self.close_tracer()

    async def _run_checked(
        self,
        request: ProbeRequest,
        checked: CheckedTarget,
        on_progress: Callable[[ProbeProgress], object] | None,
        on_start: Callable[[ProbeTarget], object] | None,
    ) -> ProbeOutcome:
        fio = self.find_fio()
        target = checked.target
        if on_start is not None:
            on_start(target)
        params = request.params
        notes: list[str] = [target.note] if target.note else []
        if params.ioengine == DEFAULT_ENGINE and io_uring_disabled(self.roots):
            params = replace(params, ioengine=FALLBACK_ENGINE)
            notes.append("io_uring is disabled (sysctl kernel.io_uring_disabled): used libaio")
        prefix = _pdeathsig_prefix()
        if not prefix:
            notes.append("setpriv not found: fio would outlive a killed iotop-plus")
        argv = prefix + build_argv(fio, request.preset, params, target, checked.fio_filename)
        traced = await self._begin_trace(target)
        before = _disk_counters(self.roots, target)
        cpu_before = _cpu_pressure(self.roots)
        run = await self._run_fio(argv, params, on_progress, checked)
        if params.ioengine == DEFAULT_ENGINE and _io_uring_unavailable(run):
            params = replace(params, ioengine=FALLBACK_ENGINE)
            notes.append("io_uring is unavailable here: fell back to libaio")
            argv = prefix + build_argv(fio, request.preset, params, target, checked.fio_filename)
            traced = await self._begin_trace(target)
            before = _disk_counters(self.roots, target)
            cpu_before = _cpu_pressure(self.roots)
            run = await self._run_fio(argv, params, on_progress, checked)
        cpu_after = _cpu_pressure(self.roots)
        tracer = self._tracer
        block = None
        if traced and tracer is not None and target.device is not None:
            block = await asyncio.to_thread(tracer.end, target.device)
        raw, doc = _final_document(run, params)
        raw, doc = _with_disk_util(raw, doc, target, before, _disk_counters(self.roots, target))
        rotational = _rotational(self.roots, target.device)
        device_class = _device_class(self.roots, target.device)
        issuers = None
        if block is not None:
            issuers = issuers_of(block, run.pid, target.device, buffered=not params.direct)
        try:
            result = parse_result(
                doc,
                request.preset,
                params,
                target=target.label,
                device=target.device,
                rotational=rotational,
                notes=tuple(notes),
                device_class=device_class,
                issuers=issuers,
                flush_write=flush_write_of(block),
                host_cpu_some_pct=cpu_pressure_pct(cpu_before, cpu_after),
            )
        except FioOutputError as exc:
            raise ProbeError(str(exc)) from exc
        if self.trace and target.device is not None:
            problem = tracer.problem if tracer is not None else None
            result = with_block_latency(result, block, problem)
        return ProbeOutcome(result, raw, tuple(argv), target)

    async def _run_fio(
        self,
        argv: list[str],
        params: ProbeParams,
        on_progress: Callable[[ProbeProgress], object] | None,
        checked: CheckedTarget,
    ) -> _FioRun:
        fio = FioProcess(argv, checked.pass_fds)
        try:
            await fio.start()
        except FileNotFoundError:
            raise ProbeError(
                f"fio is not installed ({argv[0]} not found): {INSTALL_HINT}"
            ) from None
        except PermissionError:
            raise ProbeError(f"cannot run {argv[0]}: permission denied") from None
        except OSError as exc:
            raise ProbeError(f"cannot run {argv[0]}: {exc.strerror}") from None
        _live_fio.add(fio)
        stderr_task = asyncio.ensure_future(fio.stderr.read())
        try:
            stream = JsonDocumentStream()
            docs: list[tuple[str, Any]] = []
            while True:
                chunk = await fio.stdout.read(65536)
                if not chunk:
                    break
                for raw, doc in stream.feed(chunk.decode("utf-8", "replace")):
                    if not docs:
                        _verify(checked)  # fio has made its file: is it still ours?
                    if on_progress is not None:
                        prog = progress_from(
                            doc, docs[-1][1] if docs else None, params.runtime_s, params.ioengine
                        )
                        if prog is not None:
                            on_progress(prog)
                    docs.append((raw, doc))
            garbage = stream.finish()
            stderr = (await stderr_task).decode("utf-8", "replace")
            returncode = await fio.wait()
            if returncode == 0:
                _verify(checked)
            pid = fio.popen.pid if fio.popen is not None else None
            return _FioRun(returncode, tuple(docs), tuple(stream.text), stderr, garbage, pid)
        finally:
            fio.kill()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(fio.wait())
            _live_fio.discard(fio)
            if not stderr_task.done():
                stderr_task.cancel()
            fio.close_pipes()


_DiskCounters = tuple[float, DiskCounters]


def _disk_counters(roots: Roots, target: ProbeTarget) -> _DiskCounters | None:
    """A device target's ``stat`` counters now (fio finds no device behind /proc/self/fd/N)."""
    if target.kind != "device" or target.device is None:
        return None
    path = roots.sys_class_block / target.device / "stat"
    try:
        counters = parse_sys_stat(read_bounded(path, MAX_ATTRIBUTE_BYTES), target.device)
    except (OSError, ValueError):
        return None
    return time.monotonic(), counters


def _with_disk_util(
    raw: str,
    doc: Any,
    target: ProbeTarget,
    before: _DiskCounters | None,
    after: _DiskCounters | None,
) -> tuple[str, Any]:
    """fio's document, with the ``disk_util`` fio would have given for a device by name.

    Computed the way fio does (``diskutil.c``): deltas of the device's ``stat`` and
    ``util`` = io_ticks over the elapsed time, with the wrap and reset rule of the rates (ms
    counters modulo 2^32; no ``disk_util`` when the counters were reset). The raw JSON is
    re-serialised with it.
    """
    if not isinstance(doc, dict) or doc.get("disk_util") or before is None or after is None:
        return raw, doc
    (t0, a), (t1, b) = before, after
    d = counter_deltas(a, b)
    if d is None:
        return raw, doc
    elapsed_ms = max((t1 - t0) * 1000, 1.0)
    util = {
        "name": target.device,
        "read_ios": d[READS],
        "write_ios": d[WRITES],
        "read_merges": d[READS_MERGED],
        "write_merges": d[WRITES_MERGED],
        "read_ticks": d[READ_MS],
        "write_ticks": d[WRITE_MS],
        "in_queue": d[TIME_IN_QUEUE],
        "util": min(100.0, d[IO_TICKS] * 100 / elapsed_ms),
    }
    doc = {**doc, "disk_util": [util]}
    return json.dumps(doc, indent=2), doc


def _cpu_pressure(roots: Roots) -> tuple[float, int] | None:
    """(monotonic now, ``/proc/pressure/cpu`` some total µs), or None without PSI."""
    try:
        some = read_pressure_file(roots.proc / "pressure" / "cpu").some
    except (OSError, ValueError):
        return None
    return (time.monotonic(), some.total_us) if some is not None else None


def _verify(checked: CheckedTarget) -> None:
    try:
        checked.verify()
    except TargetError as exc:
        raise ProbeError(str(exc)) from exc


async def _open_in_thread(request: ProbeRequest, roots: Roots) -> CheckedTarget:
    """:func:`open_target` in a worker thread; a cancel closes what the thread opened."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(
        None,
        lambda: open_target(
            request.target, request.preset, request.params, roots, confirm=request.confirm
        ),
    )
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        future.add_done_callback(_close_result)
        raise
    except TargetError as exc:
        raise ProbeError(str(exc)) from exc


def _close_result(future: asyncio.Future[CheckedTarget]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close()


def _pdeathsig_prefix() -> list[str]:
    setpriv = lookup_program("setpriv").path
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


# fio processes running now, for :func:`stop_all_probes` (signal handlers, atexit).
_live_fio: set[FioProcess] = set()


def stop_all_probes() -> None:
    """Kill every running fio and remove every probe directory, synchronously.

    For a signal handler or ``atexit`` in a program that cannot wait for its probe tasks to
    be cancelled; cancelling the task awaiting :meth:`ProbeRunner.run` does the same.
    """
    for fio in tuple(_live_fio):
        fio.kill()
    remove_all_probe_files()


def _io_uring_unavailable(run: _FioRun) -> bool:
    errnos = set()
    for _, doc in run.docs:
        for job in doc.get("jobs", []) if isinstance(doc, dict) else []:
            if isinstance(job, dict) and job.get("error"):
                errnos.add(job["error"])
    words = " ".join(run.text) + " " + run.stderr
    if "io_uring" not in words and not errnos:
        return False
    if errnos & _IO_URING_UNAVAILABLE and "io_uring" in words:
        return True
    lowered = words.lower()
    return "io_uring" in lowered and (
        "operation not permitted" in lowered
        or "function not implemented" in lowered
        or "not supported" in lowered
        or "not loadable" in lowered
    )


def _final_document(run: _FioRun, params: ProbeParams) -> tuple[str, Any]:
    """fio's final document, or a :class:`ProbeError` saying plainly what went wrong."""
    said = _fio_said(run)
    if run.returncode < 0:
        name = (
            signal.Signals(-run.returncode).name
            if -run.returncode in signal.valid_signals()
            else ""
        )
        raise ProbeError(f"fio was killed by signal {-run.returncode} {name}".rstrip() + said)
    if run.docs:
        raw, doc = run.docs[-1]
        errors = job_errors(doc)
        if errors:
            raise ProbeError(f"fio job failed ({', '.join(errors)}){said}")
        if run.returncode != 0:
            raise ProbeError(f"fio exited with status {run.returncode}{said}")
        return raw, doc
    lowered = said.lower()
    if "engine" in lowered and ("not loadable" in lowered or "failed to load" in lowered):
        raise ProbeError(
            f"fio has no I/O engine {params.ioengine!r} (try io_uring or libaio){said}"
        )
    if run.returncode != 0:
        raise ProbeError(f"fio exited with status {run.returncode} and no result{said}")
    if run.garbage or run.text:
        raise ProbeError(f"fio printed no JSON result{said}")
    raise ProbeError("fio printed nothing")


def _fio_said(run: _FioRun) -> str:
    lines = [*run.text, *(x for x in run.stderr.splitlines() if x.strip())]
    if run.garbage and not lines:
        lines = run.garbage.splitlines()
    # Messages that say what failed; "fio: " lines are fio's own errors.
    picked = [x.strip() for x in lines if x.strip()]
    if not picked:
        return ""
    errors = [x for x in picked if "error" in x.lower() or x.startswith("fio:")] or picked
    text = "; ".join(errors[-3:])
    if len(text) > 300:
        text = text[:297] + "..."
    return f": {text}"


def _device_class(roots: Roots, device: str | None) -> str | None:
    """The measured device's class (``virtual``, ``loop``, ``nvme``...), or None."""
    if device is None:
        return None
    from iotop_plus.sampling.inventory import read_inventory

    dev = read_inventory(roots, use_udev=False).get(device)
    return dev.media_class if dev is not None else None


def _rotational(roots: Roots, device: str | None) -> bool | None:
    if device is None:
        return None
    from iotop_plus.devices.settings import queue_device

    path = roots.sys_block / queue_device(roots, device) / "queue" / "rotational"
    try:
        return path.read_text().strip() == "1"
    except OSError:
        return None
