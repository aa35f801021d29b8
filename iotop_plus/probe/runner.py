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
``fio: pid=..., err=...``; :class:`~iotop_plus.probe.fio_stream.JsonDocumentStream` splits
them as they arrive.

One module per job: the types in :mod:`~iotop_plus.probe.run_types`, the JSON stream in
:mod:`~iotop_plus.probe.fio_stream`, the argv in :mod:`~iotop_plus.probe.fio_argv`, the error
triage in :mod:`~iotop_plus.probe.fio_triage`, the device and host reads in
:mod:`~iotop_plus.probe.device_reads`; this module runs fio.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from iotop_plus.probe.block_latency import (
    ProbeTracer,
    flush_write_of,
    issuers_of,
    with_block_latency,
)
from iotop_plus.probe.device_reads import (
    cpu_pressure,
    device_class_of,
    disk_counters,
    rotational_of,
    with_disk_util,
)
from iotop_plus.probe.fio_argv import build_argv, io_uring_disabled, pdeathsig_prefix
from iotop_plus.probe.fio_parse import parse_result
from iotop_plus.probe.fio_stream import JsonDocumentStream, progress_from
from iotop_plus.probe.fio_triage import FioRun, final_document, io_uring_unavailable
from iotop_plus.probe.fioproc import FioProcess
from iotop_plus.probe.presets import DEFAULT_ENGINE, FALLBACK_ENGINE, ProbeParams
from iotop_plus.probe.results import FioOutputError, cpu_pressure_pct
from iotop_plus.probe.run_types import (
    INSTALL_HINT,
    DirectIORefused,
    ProbeError,
    ProbeOutcome,
    ProbeProgress,
    ProbeRequest,
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
        if request.layout is not None:
            await asyncio.to_thread(_lay_out, request, checked)
        notes: list[str] = [target.note] if target.note else []
        if params.ioengine == DEFAULT_ENGINE and io_uring_disabled(self.roots):
            params = replace(params, ioengine=FALLBACK_ENGINE)
            notes.append("io_uring is disabled (sysctl kernel.io_uring_disabled): used libaio")
        prefix = pdeathsig_prefix()
        if not prefix:
            notes.append("setpriv not found: fio would outlive a killed iotop-plus")
        span = request.layout.span if request.layout is not None else None
        argv = prefix + build_argv(
            fio, request.preset, params, target, checked.fio_filename, span=span
        )
        traced = await self._begin_trace(target)
        before = disk_counters(self.roots, target)
        cpu_before = cpu_pressure(self.roots)
        run = await self._run_fio(argv, params, on_progress, checked)
        if params.ioengine == DEFAULT_ENGINE and io_uring_unavailable(run):
            params = replace(params, ioengine=FALLBACK_ENGINE)
            notes.append("io_uring is unavailable here: fell back to libaio")
            argv = prefix + build_argv(
                fio, request.preset, params, target, checked.fio_filename, span=span
            )
            traced = await self._begin_trace(target)
            before = disk_counters(self.roots, target)
            cpu_before = cpu_pressure(self.roots)
            run = await self._run_fio(argv, params, on_progress, checked)
        cpu_after = cpu_pressure(self.roots)
        tracer = self._tracer
        block = None
        if traced and tracer is not None and target.device is not None:
            block = await asyncio.to_thread(tracer.end, target.device)
        raw, doc = final_document(run, params)
        raw, doc = with_disk_util(raw, doc, target, before, disk_counters(self.roots, target))
        rotational = rotational_of(self.roots, target.device)
        device_class = device_class_of(self.roots, target.device)
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
    ) -> FioRun:
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
            return FioRun(returncode, tuple(docs), tuple(stream.text), stderr, garbage, pid)
        finally:
            fio.kill()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(fio.wait())
            _live_fio.discard(fio)
            if not stderr_task.done():
                stderr_task.cancel()
            fio.close_pipes()


def _lay_out(request: ProbeRequest, checked: CheckedTarget) -> None:
    """Make the request's probe file and try its open flags on it, before fio runs.

    Raises:
        ProbeError: a device target, or the file cannot be made.
        DirectIORefused: the filesystem refuses the flags (O_DIRECT), with the kernel's reason.
    """
    layout, workdir = request.layout, checked.workdir
    if layout is None:
        return
    if workdir is None:
        raise ProbeError("this probe lays out its own file: give a directory, not a device")
    try:
        workdir.lay_out(checked.target.size_bytes, fill=layout.fill)
    except OSError as exc:
        raise ProbeError(f"cannot lay out the probe file: {exc.strerror}") from None
    if not layout.open_flags:
        return
    try:
        workdir.try_open(os.O_RDWR | layout.open_flags)
    except OSError as exc:
        direct = " with O_DIRECT" if layout.open_flags & os.O_DIRECT else ""
        raise DirectIORefused(
            f"the filesystem refuses to open a file{direct} ({exc.strerror}), as "
            "pg_test_fsync's n/a*"
        ) from None


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
