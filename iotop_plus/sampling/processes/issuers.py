"""Who issues each device's requests: the frame's issuers part (``LiveSource.want(ISSUERS)``).

With the tracer (root and bpftrace) every request is charged to the task that submitted it
(:func:`~iotop_plus.sampling.latency.program.tracer_program` with ``attribution``): per
(device, pid) the read and write IOPS and bytes and the device latency, and per (device,
cgroup) their sums. The kernel's own I/O is one ``kernel`` entry per kind and whom it is
for (:mod:`.kernel_kinds`: the flusher's ``writeback``, a loop device's worker, a throttle's
delayed dispatch, a journal thread, ``other``). A pid's command line and cgroup are read
from ``/proc/PID`` when it is first seen (and every :data:`WHO_REFRESH_S`): the cgroup is
the v2 path when the task sits below the v2 root, else its v1 ``blkio`` path.

Without the tracer, an estimate: each process's ``/proc/PID/io`` rates, charged to the block
devices it holds files open on (marked ``estimate``; no IOPS, no latency).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.names import task_cgroup
from iotop_plus.sampling.latency.hist import JOB_FLAG, Histogram, PidIO
from iotop_plus.sampling.processes.kernel_kinds import (
    KINDS,
    OTHER,
    WRITEBACK,
    KernelKinds,
    KernelWork,
    limited_cgroups,
)
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded

if TYPE_CHECKING:
    from iotop_plus.sampling.frame.model import ProcessFrame
    from iotop_plus.sampling.latency.hist import LatencyFrame

TOP = 10
"""Issuers kept per device, by IOPS (bytes for an estimate)."""
WHO_REFRESH_S = 30.0
"""A pid's command line and cgroup are read again after this long (it may exec or move)."""
KERNEL = "kernel"
"""The comm of the kernel's entries (one per kind of its own I/O)."""
TRACER = "tracer"
"""Issuers from the tracer: exact."""
ESTIMATE = "estimate"
"""Issuers from ``/proc/PID/io`` and open files: an estimate."""
PF_KTHREAD = 0x00200000
"""``/proc/PID/stat`` flags bit of kernel threads."""
_CMDLINE_MAX = 4096
_ESTIMATE_FILES_S = 5.0


@dataclass(frozen=True)
class LatencyFigures:
    """Device time of one issuer's reads or writes over one interval, in ms."""

    p50_ms: float | None = None
    """Median."""
    p99_ms: float | None = None
    """99th percentile."""
    max_ms: float | None = None
    """The slowest request."""

    @classmethod
    def of(cls, hist: Histogram) -> LatencyFigures:
        """The figures of a histogram (all None when it is empty)."""
        s = hist.summary()
        return cls(*(_float_or_none(s[k]) for k in ("p50_ms", "p99_ms", "max_ms")))

    @classmethod
    def from_json(cls, doc: object) -> LatencyFigures:
        """Figures of :meth:`to_json` back (anything else: unknown)."""
        if not isinstance(doc, Mapping):
            return cls()
        return cls(*(_float_or_none(doc.get(k)) for k in ("p50_ms", "p99_ms", "max_ms")))

    def to_json(self) -> dict[str, float | None]:
        """``{"p50_ms", "p99_ms", "max_ms"}``."""
        return {"p50_ms": self.p50_ms, "p99_ms": self.p99_ms, "max_ms": self.max_ms}


@dataclass(frozen=True)
class Issuer:
    """One process (or one kind of the kernel's own I/O) on one device over one interval."""

    pid: int | None
    """Process id; None for the kernel entry."""
    comm: str
    """Its name (``kernel`` for the kernel's entries)."""
    cmdline: str | None
    """Its command line (arguments joined by spaces); None when unknown or a kernel thread."""
    cgroup: str | None
    """Its cgroup path (see :attr:`cgroup_source`); None when unknown."""
    cgroup_source: str | None
    """``v2`` (below the v2 root) or ``blkio`` (the v1 blkio hierarchy)."""
    r_s: float | None
    """Read requests per second; None for an estimate."""
    w_s: float | None
    """Write requests per second; None for an estimate."""
    rkB_s: float
    """kB read per second."""
    wkB_s: float
    """kB written per second."""
    read: LatencyFigures = field(default_factory=LatencyFigures)
    """Device time of its reads (unknown for an estimate)."""
    write: LatencyFigures = field(default_factory=LatencyFigures)
    """Device time of its writes (unknown for an estimate)."""
    kind: str | None = None
    """Kernel entries: what the I/O is (:data:`~.kernel_kinds.KINDS`); None for a process."""
    for_device: str | None = None
    """Kernel entries: the device the I/O is for (a loop device's backing I/O: the loop)."""
    for_cgroup: str | None = None
    """Kernel entries: the cgroup it acts for (a loop's reader, a throttled cgroup)."""

    @property
    def is_kernel(self) -> bool:
        """Whether this is one of the kernel's entries."""
        return self.pid is None

    @property
    def writeback(self) -> bool:
        """Whether this is the flusher's writeback."""
        return self.kind == WRITEBACK

    @property
    def iops(self) -> float:
        """r/s + w/s (0 when unknown)."""
        return (self.r_s or 0.0) + (self.w_s or 0.0)

    def to_json(self) -> dict[str, Any]:
        """One entry of ``snapshot``'s ``disk[].issuers`` (fixed keys)."""
        out: dict[str, Any] = {
            "pid": self.pid,
            "comm": self.comm,
            "cmdline": self.cmdline,
            "cgroup": self.cgroup,
            "cgroup_source": self.cgroup_source,
            "r/s": _round(self.r_s),
            "w/s": _round(self.w_s),
            "rkB/s": _round(self.rkB_s),
            "wkB/s": _round(self.wkB_s),
            "latency": {"read": self.read.to_json(), "write": self.write.to_json()},
        }
        if self.is_kernel:
            out["kind"] = self.kind or OTHER
            out["for"] = {"device": self.for_device, "cgroup": self.for_cgroup}
            out["writeback"] = self.writeback
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Issuer:
        """An entry of :meth:`to_json` back (recordings); histograms keep only the figures."""
        lat = doc.get("latency") or {}
        pid = _int_or_none(doc.get("pid"))
        kind = doc.get("kind")
        if pid is not None:
            kind = None
        elif kind not in KINDS:  # written before kinds: only the writeback flag
            kind = WRITEBACK if doc.get("writeback") is True else OTHER
        target = doc.get("for")
        target = target if isinstance(target, Mapping) else {}
        return cls(
            pid,
            str(doc.get("comm") or ""),
            _str_or_none(doc.get("cmdline")),
            _str_or_none(doc.get("cgroup")),
            _str_or_none(doc.get("cgroup_source")),
            _float_or_none(doc.get("r/s")),
            _float_or_none(doc.get("w/s")),
            _float_or_none(doc.get("rkB/s")) or 0.0,
            _float_or_none(doc.get("wkB/s")) or 0.0,
            LatencyFigures.from_json(lat.get("read") if isinstance(lat, Mapping) else None),
            LatencyFigures.from_json(lat.get("write") if isinstance(lat, Mapping) else None),
            kind,
            _str_or_none(target.get("device")),
            _str_or_none(target.get("cgroup")),
        )


@dataclass(frozen=True)
class CgroupShare:
    """One cgroup's requests on one device over one interval (its issuers summed)."""

    cgroup: str
    """The cgroup path."""
    cgroup_source: str | None
    """``v2`` or ``blkio``."""
    r_s: float | None
    """Read requests per second (None for an estimate)."""
    w_s: float | None
    """Write requests per second (None for an estimate)."""
    rkB_s: float
    """kB read per second."""
    wkB_s: float
    """kB written per second."""
    read: LatencyFigures = field(default_factory=LatencyFigures)
    """Device time of its reads (traced live; unknown from a recording or an estimate)."""
    write: LatencyFigures = field(default_factory=LatencyFigures)
    """Device time of its writes (likewise)."""


@dataclass(frozen=True)
class IssuersFrame:
    """The issuers part of a frame: per device, who did its I/O since the previous frame."""

    source: str
    """:data:`TRACER` (exact) or :data:`ESTIMATE`."""
    devices: Mapping[str, tuple[Issuer, ...]] = field(default_factory=lambda: MappingProxyType({}))
    """Per device name, the top :data:`TOP` issuers by IOPS (bytes for an estimate)."""
    cgroups: Mapping[str, tuple[CgroupShare, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Per device name, every cgroup's share, busiest first."""
    status: str | None = None
    """Why the figures are only an estimate, or not there yet (one line); None when exact."""

    @property
    def estimate(self) -> bool:
        """Whether these are estimated (no tracer)."""
        return self.source == ESTIMATE

    def of(self, device: str) -> tuple[Issuer, ...]:
        """The issuers of ``device`` (empty when it did no I/O)."""
        return self.devices.get(device, ())

    def to_record(self) -> dict[str, Any]:
        """The JSON the recorder stores under record type ``W``."""
        return {
            "source": self.source,
            "status": self.status,
            "devices": {n: [i.to_json() for i in who] for n, who in self.devices.items() if who},
        }

    @classmethod
    def from_record(cls, doc: Any) -> IssuersFrame | None:
        """A ``W`` record back; None when it is not one."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("devices"), Mapping):
            return None
        devices: dict[str, tuple[Issuer, ...]] = {}
        for name, entries in doc["devices"].items():
            if isinstance(entries, list):
                devices[str(name)] = tuple(
                    Issuer.from_json(e) for e in entries if isinstance(e, Mapping)
                )
        source = doc.get("source")
        return cls(
            source if source in (TRACER, ESTIMATE) else TRACER,
            MappingProxyType(devices),
            MappingProxyType({n: cgroup_shares(w) for n, w in devices.items()}),
            _str_or_none(doc.get("status")),
        )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _int_or_none(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str_or_none(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _float_or_none(v: object) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


def issuer_text(issuer: Issuer) -> str:
    """``fio[4242] 2,500 IO/s p99 0.05 ms`` (the kernel: ``kernel loop (loop3 /jobs) ...``)."""
    name = f"{issuer.comm}[{issuer.pid}]" if issuer.pid is not None else issuer.comm
    if issuer.is_kernel:
        name += f" {issuer.kind or OTHER}"
        target = " ".join(t for t in (issuer.for_device, issuer.for_cgroup) if t)
        if target and issuer.kind not in (None, OTHER, WRITEBACK):
            name += f" ({target})"
    if issuer.r_s is None and issuer.w_s is None:  # an estimate: bytes only
        return f"{name} {issuer.rkB_s + issuer.wkB_s:,.0f} kB/s"
    text = f"{name} {issuer.iops:,.0f} IO/s"
    p99 = [v for v in (issuer.read.p99_ms, issuer.write.p99_ms) if v is not None]
    if p99:
        text += f" p99 {max(p99):.3g} ms"
    return text


def cgroup_shares(issuers: Iterable[Issuer]) -> tuple[CgroupShare, ...]:
    """The issuers' figures summed per cgroup, busiest first (the kernel's entries are left
    out)."""
    sums: dict[tuple[str, str | None], list[float | None]] = {}
    for who in issuers:
        if who.cgroup is None or who.is_kernel:
            continue
        acc = sums.setdefault((who.cgroup, who.cgroup_source), [0.0, 0.0, 0.0, 0.0])
        acc[0] = None if who.r_s is None or acc[0] is None else acc[0] + who.r_s
        acc[1] = None if who.w_s is None or acc[1] is None else acc[1] + who.w_s
        acc[2] = (acc[2] or 0.0) + who.rkB_s
        acc[3] = (acc[3] or 0.0) + who.wkB_s
    shares = [
        CgroupShare(path, source, r, w, rk or 0.0, wk or 0.0)
        for (path, source), (r, w, rk, wk) in sums.items()
    ]
    shares.sort(key=lambda s: (-((s.r_s or 0.0) + (s.w_s or 0.0)), -(s.rkB_s + s.wkB_s), s.cgroup))
    return tuple(shares)


@dataclass
class _Who:
    """What ``/proc/PID`` says about an issuer, read once per :data:`WHO_REFRESH_S`."""

    comm: str | None
    cmdline: str | None
    cgroup: str | None
    cgroup_source: str | None
    kernel: bool
    read_at: float


class IssuerReader:
    """Builds each frame's :class:`IssuersFrame` from the tracer's attribution (or the
    processes' estimate), reading ``/proc/PID`` only for pids it has not seen lately."""

    def __init__(self, roots: Roots) -> None:
        """Args:
        roots: Where ``/proc`` is.
        """
        self.roots = roots
        self._who: dict[int, _Who] = {}
        self._files: dict[int, tuple[float, frozenset[str]]] = {}
        self._kinds = KernelKinds(roots)

    def frame(
        self,
        latency: LatencyFrame | None,
        processes: ProcessFrame | None,
        now: float | None = None,
        limits: object | None = None,
    ) -> IssuersFrame | None:
        """The issuers for this frame: exact from an attributing tracer that delivered an
        interval; else an estimate from the processes (when read); else None with no
        processes and a tracer still starting. ``limits``: the frame's cgroups or throttle
        watch (a cgroup part's value), whose limited cgroups a throttle's dispatch is for."""
        now = time.monotonic() if now is None else now
        if latency is not None and latency.attributed and latency.has_figures:
            span = latency.span_s or 0.0
            devices: dict[str, tuple[Issuer, ...]] = {}
            cgroups: dict[str, tuple[CgroupShare, ...]] = {}
            for name, pids in latency.issuers.items():
                every, by_cgroup = self._device_issuers(name, pids, span, now, limits)
                devices[name] = every[:TOP]
                cgroups[name] = tuple(
                    replace(
                        c,
                        read=LatencyFigures.of(m.op("read")),
                        write=LatencyFigures.of(m.op("write")),
                    )
                    if (m := by_cgroup.get(c.cgroup)) is not None
                    else c
                    for c in cgroup_shares(every)
                )
            self._forget(now)
            return IssuersFrame(TRACER, MappingProxyType(devices), MappingProxyType(cgroups))
        status = latency.status if latency is not None else None
        if processes is None:
            return None
        why = f"issuers estimated from /proc/PID/io ({status})" if status else None
        return self._estimate(processes, why or "issuers estimated from /proc/PID/io", now)

    def _device_issuers(
        self,
        device: str,
        pids: Mapping[int, PidIO],
        span: float,
        now: float,
        limits: object | None = None,
    ) -> tuple[tuple[Issuer, ...], dict[str, PidIO]]:
        """Every issuer of one device, busiest first (the kernel's I/O one entry per kind
        and whom it is for), and each cgroup's requests merged (their device-time
        histograms give the cgroup's latency)."""
        out: list[Issuer] = []
        by_cgroup: dict[str, PidIO] = {}
        kernel: dict[KernelWork, PidIO] = {}
        limited: tuple[str, ...] | None = None
        for pid, io in pids.items():
            work: KernelWork | None = None
            who = None
            if pid & JOB_FLAG or io.job is not None:  # a worker's job
                if limited is None:
                    limited = self._limited(device, limits)
                work = self._kinds.of_job(io.job, device, limited, now)
            elif not pid:  # no submission seen
                work = KernelWork(OTHER, device, None)
            else:
                who = self._whois(pid, now)
                if who is not None and who.kernel:
                    work = self._kinds.of_thread(who.comm, device)
            if work is not None:
                kernel[work] = kernel[work].merged(io) if work in kernel else io
                continue
            # who is None: gone before we looked (a short-lived dd): the tracer's comm
            found = _issuer(pid, io, who, span)
            if found.iops or found.rkB_s or found.wkB_s:  # a flush alone: nothing to show
                out.append(found)
            if found.cgroup is not None:
                seen = by_cgroup.get(found.cgroup)
                by_cgroup[found.cgroup] = io if seen is None else seen.merged(io)
        for work, io in kernel.items():
            k = _issuer(None, io, None, span)
            out.append(
                Issuer(None, KERNEL, None, None, None, k.r_s, k.w_s, k.rkB_s, k.wkB_s,
                       k.read, k.write, work.kind, work.device, work.cgroup)
            )  # fmt: skip
        out.sort(
            key=lambda i: (
                -i.iops,
                -(i.rkB_s + i.wkB_s),
                i.comm,
                i.pid or 0,
                KINDS.index(i.kind) if i.kind in KINDS else len(KINDS),
                i.for_device or "",
                i.for_cgroup or "",
            )
        )
        return tuple(out), by_cgroup

    def _limited(self, device: str, limits: object | None) -> tuple[str, ...]:
        """The cgroups with a limit on ``device`` (its whole disk's ``MAJ:MIN``)."""
        if limits is None:
            return ()
        from iotop_plus.sampling.topology.blockdev import partition_parent, read_dev_numbers

        whole = partition_parent(self.roots.sys_class_block / device) or device
        numbers = read_dev_numbers(self.roots, whole)
        if numbers is None:
            return ()
        return limited_cgroups(limits, f"{numbers[0]}:{numbers[1]}")

    def _whois(self, pid: int, now: float) -> _Who | None:
        """The cached facts of ``pid``; None when it is gone and was never read."""
        known = self._who.get(pid)
        if known is not None and now - known.read_at < WHO_REFRESH_S:
            return known
        fresh = _read_who(self.roots, pid, now)
        if fresh is None:
            return known
        self._who[pid] = fresh
        return fresh

    def _forget(self, now: float) -> None:
        if len(self._who) > 4096:
            self._who = {p: w for p, w in self._who.items() if now - w.read_at < WHO_REFRESH_S}

    def _estimate(self, processes: ProcessFrame, status: str, now: float) -> IssuersFrame:
        from iotop_plus.sampling.topology.blockdev import open_block_files

        per_device: dict[str, list[Issuer]] = {}
        seen: set[int] = set()
        for key, rates in processes.rates.items():
            if rates is None or not rates.disk_bps:
                continue
            task = rates.task
            seen.add(task.pid)
            cached = self._files.get(task.pid)
            if cached is None or now - cached[0] >= _ESTIMATE_FILES_S:
                found = frozenset(f.device for f in open_block_files(self.roots, task.pid))
                cached = (now, found)
                self._files[task.pid] = cached
            path = processes.cgroups.get(key)
            who = self._whois(task.pid, now)
            source = who.cgroup_source if who is not None else None
            for device in cached[1]:
                per_device.setdefault(device, []).append(
                    Issuer(
                        task.pid,
                        task.comm,
                        task.cmdline or None,
                        path if path is not None else (who.cgroup if who else None),
                        source,
                        None,
                        None,
                        (rates.read_bps or 0.0) / 1024,
                        (rates.write_bps or 0.0) / 1024,
                    )
                )
        self._files = {p: f for p, f in self._files.items() if p in seen}
        devices = {
            n: tuple(sorted(w, key=lambda i: (-(i.rkB_s + i.wkB_s), i.pid or 0))[:TOP])
            for n, w in per_device.items()
        }
        cgroups = {n: cgroup_shares(w) for n, w in per_device.items()}
        return IssuersFrame(ESTIMATE, MappingProxyType(devices), MappingProxyType(cgroups), status)


def _issuer(pid: int | None, io: PidIO, who: _Who | None, span: float) -> Issuer:
    read, write = io.op("read"), io.op("write")
    per_s = 1 / span if span > 0 else 0.0
    return Issuer(
        pid,
        (who.comm if who is not None and who.comm else None) or io.comm,
        who.cmdline if who is not None else None,
        who.cgroup if who is not None else None,
        who.cgroup_source if who is not None else None,
        read.count * per_s,
        write.count * per_s,
        io.sectors.get("read", 0) * 512 / 1024 * per_s,
        io.sectors.get("write", 0) * 512 / 1024 * per_s,
        LatencyFigures.of(read),
        LatencyFigures.of(write),
    )


def _read_who(roots: Roots, pid: int, now: float) -> _Who | None:
    """``/proc/PID``'s comm, command line, cgroup and kernel-thread flag; None when gone."""
    base = f"{roots.proc}/{pid}"
    try:
        stat = read_bounded(f"{base}/stat", MAX_ATTRIBUTE_BYTES)
    except OSError:
        return None
    head, _, rest = stat.rpartition(")")
    fields = rest.split()
    try:
        kernel = bool(int(fields[6]) & PF_KTHREAD)
    except (IndexError, ValueError):
        kernel = False
    comm = head.partition("(")[2] or None
    cmdline = cgroup = source = None
    if not kernel:
        try:
            with open(f"{base}/cmdline", "rb") as f:
                raw = f.read(_CMDLINE_MAX)
            cmdline = (
                raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "surrogateescape") or None
            )
        except OSError:
            cmdline = None
        with contextlib.suppress(OSError):
            text = read_bounded(f"{base}/cgroup", MAX_ATTRIBUTE_BYTES, "surrogateescape")
            cgroup, source = cgroup_of(text)
    return _Who(comm, cmdline, cgroup, source, kernel, now)


def cgroup_of(text: str) -> tuple[str | None, str | None]:
    """``(path, source)`` of a ``/proc/PID/cgroup``: the one rule of
    :func:`~iotop_plus.sampling.cgroups.names.task_cgroup` (the Processes tab's too)."""
    return task_cgroup(text)
