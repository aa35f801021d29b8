"""The durability probe, planned and read: what each sync method runs, and what its figures say.

Each PostgreSQL method does at the syscall level what ``pg_test_fsync`` does: a 16 MiB file
laid out and synced once, then each op rewrites offset 0 (and 8192 for two writes) with 8 KiB
writes and makes them durable: ``open_datasync`` and ``open_sync`` open with
O_DSYNC or O_SYNC and O_DIRECT (a filesystem refusing O_DIRECT gives no figure, as
``pg_test_fsync`` prints ``n/a*``; never a buffered stand-in), ``fdatasync`` and ``fsync``
call that after the op's writes. ``etcd`` is etcd's own fio job: 2300-byte sequential writes
over 22 MiB, each followed by fdatasync. Running them is in
:mod:`iotop_plus.probe.durability`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.probe.results import ProbeResult
from iotop_plus.probe.run_types import FileLayout

DEFAULT_RUNTIME_S = 2
"""Seconds per method: nine methods make a probe of about half a minute."""
PG_METHODS = ("open_datasync", "fdatasync", "fsync", "open_sync")
"""PostgreSQL's ``wal_sync_method`` values on Linux, in ``pg_test_fsync``'s order."""
ETCD_P99_US = 10_000.0
"""etcd wants the 99th percentile of its WAL fdatasync under 10 ms."""
FLUSH_PLAUSIBLE_US = {True: 1000.0, False: 50.0}
"""A flush faster than this (rotational, other) on a physical device with a write-back cache
did not reach stable media: the cache must be protected against power loss."""
CLOSE_SHARE = 0.10
"""A method within this share of the default's ops/s is no reason to change the default."""
PG_DEFAULT = "fdatasync"
"""PostgreSQL's ``wal_sync_method`` default on Linux."""


@dataclass(frozen=True)
class Method:
    """One sync method with one or two writes per op: the fio run and the file it rewrites."""

    name: str
    """``open_datasync``, ``fdatasync``, ``fsync``, ``open_sync`` or ``etcd``."""
    writes_per_op: int
    """Writes before each sync (1 or 2)."""
    preset: Preset
    """The fio pattern."""
    layout: FileLayout
    """The file laid out first, and the region fio rewrites."""

    @property
    def sync_call(self) -> bool:
        """Whether durability comes from a call after the writes (else from the open flags)."""
        return not self.preset.sync_io

    @property
    def label(self) -> str:
        """``fdatasync x2``: the method and its writes per op."""
        return f"{self.name} x{self.writes_per_op}"


def _pg_method(name: str, writes: int, runtime_s: int) -> Method:
    direct = name.startswith("open_")
    sync_io = {"open_datasync": "dsync", "open_sync": "sync"}.get(name, "")
    flags = {"open_datasync": os.O_DSYNC, "open_sync": os.O_SYNC}.get(name, 0)
    what = "one 8 KiB write" if writes == 1 else "two 8 KiB writes"
    preset = Preset(
        name,
        f"{name}, {what} per op",
        "write",
        ProbeParams(
            bs="8k",
            iodepth=1,
            numjobs=1,
            runtime_s=runtime_s,
            size_mb=16,
            direct=direct,
            ioengine="psync",
        ),
        f"PostgreSQL's wal_sync_method={name} as pg_test_fsync runs it: {what} at the start "
        "of a 16 MiB file, "
        + (
            f"opened O_DIRECT|{'O_DSYNC' if sync_io == 'dsync' else 'O_SYNC'}"
            if direct
            else f"then {name}()"
        ),
        fsync=writes if name == "fsync" else 0,
        fdatasync=writes if name == "fdatasync" else 0,
        sync_io=sync_io,
    )
    span = f"{8 * writes}k"
    return Method(name, writes, preset, FileLayout(span, True, (os.O_DIRECT | flags) * direct))


def plan(runtime_s: int = DEFAULT_RUNTIME_S) -> tuple[Method, ...]:
    """Every method in the order run: PostgreSQL's with one write, with two, then etcd's."""
    methods = [_pg_method(n, w, runtime_s) for w in (1, 2) for n in PG_METHODS]
    etcd = Preset(
        "etcd",
        "etcd WAL, 2300-byte writes with fdatasync",
        "write",
        ProbeParams(
            bs="2300",
            iodepth=1,
            numjobs=1,
            runtime_s=runtime_s,
            size_mb=22,
            direct=False,
            ioengine="psync",
        ),
        "etcd's disk check: sequential 2300-byte writes over 22 MiB, each followed by "
        "fdatasync; etcd wants its p99 under 10 ms.",
        fdatasync=1,
    )
    methods.append(Method("etcd", 1, etcd, FileLayout("22m", fill=False)))
    return tuple(methods)


@dataclass(frozen=True)
class MethodResult:
    """One method's figures, or why it has none."""

    name: str
    """The method."""
    writes_per_op: int
    """Writes per op."""
    ops_per_s: float | None = None
    """Ops (writes then sync) per second."""
    p50_us: float | None = None
    """Median of the sync call (fdatasync, fsync, etcd) or of each write (open_*)."""
    p99_us: float | None = None
    """99th percentile of the same."""
    reason: str | None = None
    """Why there are no figures (O_DIRECT refused), else None."""
    device_flushes: int | None = None
    """Flush requests the device completed during the run (diskstats), when known."""

    @property
    def label(self) -> str:
        """``fdatasync x2``."""
        return f"{self.name} x{self.writes_per_op}"


def method_result(method: Method, result: ProbeResult, flushes: int | None) -> MethodResult:
    """The method's figures from its fio run."""
    write = result.write
    ops = write.iops / method.writes_per_op if write is not None else None
    lat = result.fsync if method.sync_call else (write.clat if write is not None else None)
    return MethodResult(
        method.name,
        method.writes_per_op,
        round(ops, 1) if ops is not None else None,
        lat.percentile("p50") if lat is not None else None,
        lat.percentile("p99") if lat is not None else None,
        None if lat is not None else "fio timed no sync",
        flushes,
    )


@dataclass(frozen=True)
class DeviceFacts:
    """What the device under the target says about its cache."""

    device: str | None
    """The device holding the target's filesystem (None: none, as on tmpfs)."""
    queue_device: str | None
    """The device whose ``queue/`` serves it (a partition's disk)."""
    write_cache: str | None
    """``queue/write_cache``: ``write back`` or ``write through``."""
    fua: bool | None
    """``queue/fua``: the device takes writes that bypass its cache."""
    rotational: bool | None
    """``queue/rotational``."""
    kind: str | None
    """``physical`` (sd*, nvme*), ``virtual`` (loop, virtio, xen) or None (anything else)."""


def device_kind(name: str, sysfs_path: str) -> str | None:
    """``virtual`` for loop, virtio and xen devices, ``physical`` for sd* and nvme* (unless
    reached through virtio: virtio-scsi), else None. ``sysfs_path`` is the resolved
    ``/sys/class/block/NAME`` link."""
    if name.startswith(("loop", "vd", "xvd")) or "/virtio" in sysfs_path:
        return "virtual"
    if name.startswith(("sd", "nvme")):
        return "physical"
    return None


def callout(facts: DeviceFacts, flush_mean_us: float | None) -> str | None:
    """What the device's cache means for durability, or None when nothing needs saying."""
    if facts.kind == "virtual":
        return "virtual device: durability depends on the host"
    if (
        facts.kind != "physical"
        or facts.write_cache != "write back"
        or flush_mean_us is None
        or facts.rotational is None
    ):
        return None
    limit = FLUSH_PLAUSIBLE_US[facts.rotational]
    if flush_mean_us >= limit:
        return None
    media = "a spinning disk" if facts.rotational else "flash"
    return (
        f"{facts.queue_device} flushes its write-back cache in {flush_mean_us:,.0f} µs on "
        f"average, faster than {media} can ({limit:,.0f} µs): durable only with power-loss "
        "protection"
    )


def honest(m: MethodResult, facts: DeviceFacts) -> bool:
    """Whether the method's ops reached stable storage as far as the device shows: figures,
    a device under it, and, with a write-back cache and no FUA, at least one device flush
    per two ops (diskstats; unknown counts pass)."""
    if m.ops_per_s is None or facts.device is None:
        return False
    if facts.write_cache != "write back" or facts.fua or m.device_flushes is None:
        return True
    return m.device_flushes * 2 >= m.ops_per_s  # per second of a run of at least 1 s


@dataclass(frozen=True)
class Suggestion:
    """The fastest honest method and the settings it suggests."""

    wal_sync_method: str | None
    """PostgreSQL's setting to use, or None when no method is honest."""
    fastest: str | None
    """The fastest honest PostgreSQL method with one write per op."""
    etcd_p99_ok: bool | None
    """Whether etcd's fdatasync p99 is under 10 ms (None: not measured)."""
    lines: tuple[str, ...]
    """The same in words."""


def suggest(methods: Sequence[MethodResult], facts: DeviceFacts, note: str | None) -> Suggestion:
    """Name the fastest honest PostgreSQL method (one write per op) and etcd's verdict."""
    lines: list[str] = []
    pg = {m.name: m for m in methods if m.writes_per_op == 1 and m.name in PG_METHODS}
    ranked = sorted(
        (m for m in pg.values() if honest(m, facts)), key=lambda m: -(m.ops_per_s or 0.0)
    )
    skipped = [m.name for m in pg.values() if m.ops_per_s is not None and not honest(m, facts)]
    fastest = ranked[0] if ranked else None
    setting: str | None = None
    if facts.device is None:
        lines.append("no block device under the target (memory): nothing here is durable")
    elif fastest is None:
        lines.append("no PostgreSQL method made its writes durable here")
    else:
        default = pg.get(PG_DEFAULT)
        keep = (
            default is not None
            and default in ranked
            and (default.ops_per_s or 0.0) >= (fastest.ops_per_s or 0.0) * (1 - CLOSE_SHARE)
        )
        setting = PG_DEFAULT if keep else fastest.name
        lines.append(
            f"fastest honest method: {fastest.name} ({fastest.ops_per_s:,.0f} ops/s, one "
            "8 KiB write per op)"
        )
        why = (
            " (the default; the fastest is within 10 %)" if keep and fastest is not default else ""
        )
        lines.append(f"PostgreSQL: wal_sync_method = {setting}{why}")
    if skipped:
        lines.append(
            f"not counted: {', '.join(skipped)} (fewer device flushes than ops with a "
            "write-back cache and no FUA)"
        )
    etcd = next((m for m in methods if m.name == "etcd"), None)
    etcd_ok: bool | None = None
    if etcd is not None and etcd.p99_us is not None:
        etcd_ok = etcd.p99_us < ETCD_P99_US
        verdict = "within" if etcd_ok else "over"
        lines.append(
            f"etcd: fdatasync p99 {etcd.p99_us / 1000:,.2f} ms, {verdict} etcd's 10 ms"
            + ("" if etcd_ok else " (expect slow-disk warnings and leader elections)")
        )
    if note:
        lines.append(note)
    return Suggestion(setting, fastest.name if fastest else None, etcd_ok, tuple(lines))


@dataclass(frozen=True)
class DurabilityResult:
    """A whole durability probe."""

    target: str
    """Where it ran, for people."""
    device: str | None
    """The device under the target."""
    runtime_s: int
    """Seconds per method."""
    methods: tuple[MethodResult, ...]
    """Every method run (or refused), in order."""
    write_cache: str | None
    """The device's ``queue/write_cache``."""
    fua: bool | None
    """The device's ``queue/fua``."""
    flush_mean_us: float | None
    """Mean device time of a flush over the probe (diskstats), None without flushes."""
    flush_p50_us: float | None
    """Median device time of a flush (block tracer, ``--trace`` only)."""
    callout: str | None
    """What the cache means for durability, when anything."""
    suggestion: Suggestion
    """The method and settings suggested."""
    complete: bool = True
    """False when stopped before every method ran."""


def durability_json(r: DurabilityResult) -> dict[str, Any]:
    """The result as the ``--format json`` document."""
    return {
        "tool": "iotop-plus",
        "plan": "durability",
        "target": r.target,
        "device": r.device,
        "runtime_s": r.runtime_s,
        "complete": r.complete,
        "methods": [
            {
                "name": m.name,
                "writes_per_op": m.writes_per_op,
                "ops_per_s": m.ops_per_s,
                "p50_us": m.p50_us,
                "p99_us": m.p99_us,
                "reason": m.reason,
                "device_flushes": m.device_flushes,
            }
            for m in r.methods
        ],
        "write_cache": r.write_cache,
        "fua": r.fua,
        "flush_mean_us": r.flush_mean_us,
        "flush_p50_us": r.flush_p50_us,
        "callout": r.callout,
        "suggestion": {
            "wal_sync_method": r.suggestion.wal_sync_method,
            "fastest": r.suggestion.fastest,
            "etcd_p99_ok": r.suggestion.etcd_p99_ok,
            "lines": list(r.suggestion.lines),
        },
    }


def method_line(m: MethodResult) -> str:
    """``fdatasync x1     1,234 ops/s  p50 812.0 µs  p99 1,950.3 µs``, or the reason."""
    if m.ops_per_s is None:
        return f"{m.label:<16} n/a: {m.reason}"
    p50 = f"{m.p50_us:,.1f}" if m.p50_us is not None else "-"
    p99 = f"{m.p99_us:,.1f}" if m.p99_us is not None else "-"
    return f"{m.label:<16} {m.ops_per_s:>10,.0f} ops/s  p50 {p50} µs  p99 {p99} µs"


def durability_text(r: DurabilityResult) -> str:
    """The result as plain text."""
    lines = [
        f"Durability: sync methods on {r.target}, {r.runtime_s} s each"
        + ("" if r.complete else " (stopped early)"),
        "  (open_*: each write's latency; the others: the sync call's)",
    ]
    lines += [f"  {method_line(m)}" for m in r.methods]
    fua = "-" if r.fua is None else ("yes" if r.fua else "no")
    mean = f"{r.flush_mean_us:,.1f} µs" if r.flush_mean_us is not None else "-"
    p50 = f"  p50 {r.flush_p50_us:,.1f} µs" if r.flush_p50_us is not None else ""
    lines.append(f"  write cache {r.write_cache or '-'}, FUA {fua}, flush mean {mean}{p50}")
    lines += [f"  {line}" for line in r.suggestion.lines]
    return "\n".join(lines) + "\n"
