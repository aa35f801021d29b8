"""Probe hints that misled (#22 item 11): fsync flushes read as other I/O, and a CPU-starved
host blamed on the device."""

from __future__ import annotations

from dataclasses import replace

from iotop_plus.probe.experiment_plans import SweepStep, analyze_sweep
from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.results import (
    CPU_STARVED_PCT,
    DiskUtil,
    Issuers,
    ProbeResult,
    cpu_pressure_pct,
    hints_for,
    place,
)
from tests.unit.test_probe_results import _direction, _result


def _wal_result(**changes: object) -> ProbeResult:
    wal = PRESETS["wal"]
    write = _direction(iops=4_609 / 60)
    base = _result(
        preset="wal",
        title=wal.title,
        params=replace(wal.params, runtime_s=60),
        read=None,
        write=write,
        # Seen on a raw loop device: 4,609 writes and 4,609 fsyncs made writes +9,218.
        disk_util=(DiskUtil("loop0", 0, 2 * write.total_ios, 40.0),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _hint(result: ProbeResult, code: str, preset: str = "wal") -> str | None:
    return next((h.text for h in hints_for(result, PRESETS[preset]) if h.code == code), None)


def test_fsync_flushes_the_kernel_counts_as_writes_are_not_other_io() -> None:
    assert _hint(_wal_result(), "other-io") is None


def test_with_the_tracer_other_io_is_what_other_processes_issued() -> None:
    fio = _wal_result().write.total_ios  # type: ignore[union-attr]
    own = Issuers(fio=2 * fio, journal=900)
    assert _hint(_wal_result(issuers=own), "other-io") is None
    busy = Issuers(fio=2 * fio, journal=900, others=(("dd[4242]", fio), ("cp[7]", 40)))
    text = _hint(_wal_result(issuers=busy), "other-io")
    assert text is not None
    assert f"{fio + 40:,} requests from dd[4242] ({fio:,}), cp[7] (40)," in text
    alone = Issuers(fio=2 * fio, journal=900, others=(("dd[4242]", fio),))
    assert f"{fio:,} requests from dd[4242], against" in (
        _hint(_wal_result(issuers=alone), "other-io") or ""
    )
    assert f"against fio's {2 * fio:,}" in text
    # A read probe, traced: its own requests are all fio's, the device counters say nothing.
    quiet = _result(issuers=Issuers(fio=3_000_000, journal=0))
    assert _hint(quiet, "other-io", "randread") is None


def test_a_sweep_step_with_other_issuers_says_so_and_one_without_does_not() -> None:
    step = SweepStep(1, 10_000, 100, 150, 40_000, 90.0, fio_ios=30_000, device_ios=30_000)
    busy = replace(step, qd=2, issuers=Issuers(30_000, 0, (("dd[9]", 9_000),)))
    lines = analyze_sweep([step, busy]).other_io
    assert len(lines) == 1 and lines[0].startswith("other I/O hit the device during QD 2")


def test_a_cpu_starved_probe_blames_the_cpu_not_the_device() -> None:
    # Stalls and a long tail, as a starved host gives them.
    jittery = replace(_direction(p99=300, p9999=5_000), bw_min_kib_s=1_000.0)
    calm = _result(read=jittery, host_cpu_some_pct=2.0)
    assert "the device stalled" in (_hint(calm, "stalls", "randread") or "")
    starved = replace(calm, host_cpu_some_pct=97.0)
    codes = {h.code for h in hints_for(starved, PRESETS["randread"])}
    assert "cpu-starved" in codes
    assert not codes & {"stalls", "tail-jitter", "idle-device"}
    text = _hint(starved, "cpu-starved", "randread") or ""
    assert "some task waited for a CPU 97% of the time" in text
    slow = _result(read=_direction(iops=10), host_cpu_some_pct=97.0)
    assert "device?" not in place(slow, PRESETS["randread"])
    assert "short of CPU" in place(slow, PRESETS["randread"])
    assert CPU_STARVED_PCT > 2.0


def test_cpu_pressure_is_the_stalled_share_of_the_interval() -> None:
    assert cpu_pressure_pct((10.0, 1_000_000), (12.0, 2_940_000)) == 97.0
    assert cpu_pressure_pct(None, (12.0, 2_000_000)) is None
    assert cpu_pressure_pct((10.0, 5), (10.0, 5)) is None
