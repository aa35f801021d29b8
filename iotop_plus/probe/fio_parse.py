"""fio's JSON -> :class:`~iotop_plus.probe.results.ProbeResult`, with its hints and placement.

fio 3.33 JSON (``stat.c``), per job: ``error`` (errno), ``read``/``write``/``sync`` blocks,
``usr_cpu``/``sys_cpu``; per direction ``iops``, ``bw`` (KiB/s), ``io_bytes``, ``total_ios``,
``runtime`` (ms), ``slat_ns``/``clat_ns``/``lat_ns`` with ``clat_ns.percentile`` keyed
``"99.000000"``, and ``iops_min``/``iops_max``/``bw_min``/``bw_max``/``bw_mean`` from 500 ms
samples. ``sync.lat_ns`` holds the latency of fsync and fdatasync calls (``sync.total_ios``
counts fsyncs only). ``disk_util`` lists what the device served.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.probe.results import (
    PERCENTILES,
    BlockLatency,
    DirectionResult,
    DiskUtil,
    FioOutputError,
    Issuers,
    Latency,
    ProbeResult,
    hints_for,
    place,
)


def _latency(block: Any) -> Latency:
    pct = block.get("percentile") or {}
    pairs = tuple((label, pct[key] / 1000.0) for label, key in PERCENTILES if key in pct)
    return Latency(
        mean_us=float(block.get("mean", 0.0)) / 1000.0,
        min_us=float(block.get("min", 0)) / 1000.0,
        max_us=float(block.get("max", 0)) / 1000.0,
        percentiles_us=pairs,
    )


def _direction(block: Any) -> DirectionResult | None:
    if not block or not block.get("total_ios"):
        return None
    return DirectionResult(
        iops=float(block["iops"]),
        bw_kib_s=int(block["bw"]),
        io_bytes=int(block["io_bytes"]),
        total_ios=int(block["total_ios"]),
        runtime_ms=int(block["runtime"]),
        clat=_latency(block["clat_ns"]),
        slat_mean_us=float(block["slat_ns"]["mean"]) / 1000.0,
        lat_mean_us=float(block["lat_ns"]["mean"]) / 1000.0,
        iops_min=float(block.get("iops_min", 0)),
        iops_max=float(block.get("iops_max", 0)),
        bw_min_kib_s=float(block.get("bw_min", 0)),
        bw_max_kib_s=float(block.get("bw_max", 0)),
        bw_mean_kib_s=float(block.get("bw_mean", 0.0)),
        bw_samples=int(block.get("bw_samples", 0)),
    )


def _synced(sync: Any) -> bool:
    """Whether fio timed syncs: ``fsync=`` counts them in ``total_ios``, ``fdatasync=``
    leaves that 0 and gives only ``lat_ns`` (with its sample count ``N``)."""
    lat = sync.get("lat_ns")
    return isinstance(lat, dict) and bool(sync.get("total_ios") or lat.get("N"))


def job_errors(doc: Any) -> list[str]:
    """``jobname: errno N`` for every job whose ``error`` is set."""
    errors = []
    for job in doc.get("jobs", []) if isinstance(doc, dict) else []:
        err = job.get("error", 0) if isinstance(job, dict) else 0
        if err:
            reason = os.strerror(err) if isinstance(err, int) else str(err)
            errors.append(f"{job.get('jobname', '?')}: {reason} (errno {err})")
    return errors


def parse_result(
    doc: Any,
    preset: Preset,
    params: ProbeParams,
    *,
    target: str,
    device: str | None,
    rotational: bool | None = None,
    notes: tuple[str, ...] = (),
    device_class: str | None = None,
    issuers: Issuers | None = None,
    flush_write: BlockLatency | None = None,
    host_cpu_some_pct: float | None = None,
) -> ProbeResult:
    """Turn fio's final JSON document into a :class:`ProbeResult` with hints and placement.

    ``issuers`` and ``flush_write`` come from the block tracer, ``host_cpu_some_pct`` from
    the CPU pressure over the run (:func:`cpu_pressure_pct`); each is None when unknown.

    Raises:
        FioOutputError: the document has no jobs, a job failed, or a field is missing.
    """
    if not isinstance(doc, dict) or not doc.get("jobs"):
        raise FioOutputError("fio's JSON has no jobs")
    errors = job_errors(doc)
    if errors:
        raise FioOutputError("fio job failed: " + ", ".join(errors))
    job = doc["jobs"][0]
    try:
        read = _direction(job.get("read"))
        write = _direction(job.get("write"))
        sync = job.get("sync") or {}
        fsync = _latency(sync["lat_ns"]) if _synced(sync) else None
        disks = tuple(
            DiskUtil(
                name=str(d["name"]),
                read_ios=int(d.get("read_ios", 0)),
                write_ios=int(d.get("write_ios", 0)),
                util_pct=float(d.get("util", 0.0)),
            )
            for d in doc.get("disk_util", [])
        )
        result = ProbeResult(
            preset=preset.name,
            title=preset.title,
            params=params,
            target=target,
            device=device,
            fio_version=str(doc.get("fio version", "fio")),
            read=read,
            write=write,
            fsync=fsync,
            usr_cpu_pct=float(job["usr_cpu"]),
            sys_cpu_pct=float(job["sys_cpu"]),
            disk_util=disks,
            notes=notes,
            issuers=issuers,
            flush_write=flush_write,
            host_cpu_some_pct=host_cpu_some_pct,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise FioOutputError(f"fio's JSON lacks an expected field ({exc})") from None
    if not result.directions:
        raise FioOutputError("fio completed no I/O")
    return _with_reading(result, preset, rotational, device_class)


def _with_reading(
    result: ProbeResult, preset: Preset, rotational: bool | None, device_class: str | None
) -> ProbeResult:
    return replace(
        result,
        hints=tuple(hints_for(result, preset, rotational)),
        placement=place(result, preset, device_class),
    )
