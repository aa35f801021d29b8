"""Issue #24 item 5: the verdict for a device, on hand-made frames: each cause with its
figures and confidence, "no clear cause" when nothing holds, and the causes the frame had no
data for named as unchecked (never guessed)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.sampling.blocked.model import BlockedGroup, BlockedTasks
from iotop_plus.sampling.cgroups.files import IoLimits
from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupSample, CgroupStat, IoRates
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame.model import CgroupFrame, Frame
from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.sampling.health.smart import DeviceHealth
from iotop_plus.sampling.latency.hist import (
    RUNNING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
)
from iotop_plus.sampling.memory.dirty import Memory
from iotop_plus.sampling.pressure import Pressure, PressureLine, ResourcePressure
from iotop_plus.sampling.processes.issuers import TRACER, IssuersFrame
from iotop_plus.sampling.processes.issuers import Issuer as IssuerRow
from iotop_plus.sampling.topology.inventory import Inventory
from iotop_plus.why.diagnosis import CAUSES, Diagnosis, diagnose


def rates(
    reads: int = 0,
    writes: int = 0,
    await_ms: float = 1.0,
    busy_ms: int = 100,
    queue_ms: int | None = None,
) -> DeviceRates:
    """One second of a device: ``reads``/``writes`` each taking ``await_ms``, busy
    ``busy_ms`` ms, ``queue_ms`` ms of time-in-queue (aqu-sz = queue_ms / 1000)."""
    after = [0] * 17
    after[0], after[4] = reads, writes
    after[2], after[6] = reads * 8, writes * 8
    after[3], after[7] = round(reads * await_ms), round(writes * await_ms)
    after[9] = busy_ms
    after[10] = queue_ms if queue_ms is not None else round((reads + writes) * await_ms)
    return DeviceRates((0,) * 17, tuple(after), 1.0)


def psi(cpu_some: float = 0.0, io_some: float = 0.0) -> Pressure:
    def res(some: float) -> ResourcePressure:
        return ResourcePressure(PressureLine(some, some, some, 0), PressureLine(0, 0, 0, 0))

    return Pressure({"io": res(io_some), "memory": res(0.0), "cpu": res(cpu_some)})


QUIET_MEMORY = Memory(1000, 0, 400000, 200000)


def frame(
    device_rates: DeviceRates | None,
    *,
    nr_requests: int = 64,
    pressure: Pressure | None = None,
    memory: Memory | None = QUIET_MEMORY,
    **parts: Any,
) -> Frame:
    """A frame of ``sda``; ``parts`` are the frame's own fields (``cgroups``, ``latency``)
    or registered parts' values by key (``health``, ``issuers``, ``throttles``)."""
    fields = {f.name for f in dataclasses.fields(Frame)}
    values = {"memory": memory, **{k: v for k, v in parts.items() if k not in fields}}
    return Frame(
        sample=Sample(100.0, 1795669200.0, MappingProxyType({})),
        rates=MappingProxyType({"sda": device_rates}),
        inventory=Inventory({}),
        inventory_changed=False,
        nr_requests=MappingProxyType({"sda": nr_requests}),
        elapsed_s=1.0,
        ever_used=frozenset({"sda"}),
        pressure=pressure if pressure is not None else psi(),
        parts={k: v for k, v in values.items() if v is not None},
        **{k: v for k, v in parts.items() if k in fields},
    )


def cgroups(
    read_iops: float, riops_limit: int | None, source: str = "blkio.throttle"
) -> CgroupFrame:
    limits = None
    if riops_limit is not None:
        keys: Mapping[str, int | None] = {
            "rbps": None,
            "wbps": None,
            "riops": riops_limit,
            "wiops": None,
        }
        limits = IoLimits({"8:0": keys}, source=source)
    stat = CgroupStat("/db", 1, MappingProxyType({}), None, limits)
    sample = CgroupSample(
        100.0,
        1795669200.0,
        "v1",
        "/sys/fs/cgroup/blkio",
        MappingProxyType({"/db": stat}),
        MappingProxyType({"8:0": "sda"}),
    )
    r = IoRates(0.0, 0.0, read_iops, 0.0, 0.0)
    return CgroupFrame(
        sample, MappingProxyType({"/db": CgroupRates(r, MappingProxyType({"8:0": r}))})
    )


def everything(**overrides: Any) -> dict[str, Any]:
    """Every part present and quiet: nothing unchecked unless a test takes one away."""
    parts: dict[str, Any] = {
        "cgroups": cgroups(100.0, None),
        "health": HealthFrame(MappingProxyType({}), MappingProxyType({}), MappingProxyType({})),
        "latency": LatencyFrame(RUNNING, MappingProxyType({}), span_s=1.0),
        "issuers": IssuersFrame(TRACER),
        "blocked": BlockedTasks((), 0, 0.0, True),
    }
    parts.update(overrides)
    return parts


def causes(verdict: Diagnosis) -> list[str]:
    return [c.cause for c in verdict.causes]


def test_an_idle_device_has_nothing_to_explain() -> None:
    verdict = diagnose(frame(rates(busy_ms=0), **everything()), "sda")
    [none] = verdict.as_json()
    assert none["cause"] == "none" and none["text"].startswith("idle")


def test_quiet_io_with_every_part_present_is_no_clear_cause_and_nothing_unchecked() -> None:
    verdict = diagnose(frame(rates(reads=200, await_ms=0.5), **everything()), "sda")
    assert causes(verdict) == ["none"] and verdict.unchecked == ()
    [none] = verdict.as_json()
    assert none["text"] == "no clear cause" and none["confidence"] == "medium"
    assert none["evidence"]["r/s"] == 200.0


def test_a_bare_frame_names_what_it_could_not_check_and_never_guesses() -> None:
    verdict = diagnose(frame(rates(reads=200, await_ms=40.0)), "sda")
    assert causes(verdict) == ["none"] and verdict.causes[0].confidence == "low"
    assert set(verdict.unchecked) == {"throttled", "errors", "queue", "blocked"}
    assert "unchecked: throttled" in verdict.line()


def test_no_rates_yet_is_none() -> None:
    verdict = diagnose(frame(None), "sda")
    assert causes(verdict) == ["none"] and "no rates" in verdict.causes[0].text


def test_a_cgroup_at_90_percent_of_its_limit_is_throttled_with_its_figures() -> None:
    verdict = diagnose(frame(rates(reads=98), **everything(cgroups=cgroups(98.0, 100))), "sda")
    [throttled] = verdict.as_json()
    assert throttled["cause"] == "throttled" and throttled["confidence"] == "high"
    assert throttled["evidence"] == {
        "cgroup": "/db",
        "limit": "riops",
        "limit_value": 100,
        "used_pct": 98.0,
        "source": "blkio.throttle",
    }
    assert "/db" in throttled["text"] and "riops 100" in throttled["text"]
    below = diagnose(frame(rates(reads=85), **everything(cgroups=cgroups(85.0, 100))), "sda")
    assert "throttled" not in causes(below)


def test_the_queue_at_nr_requests_is_saturated() -> None:
    # 1,000 I/Os of 60 ms: aqu-sz 60 of nr_requests 64.
    verdict = diagnose(frame(rates(reads=1000, await_ms=60.0, busy_ms=1000), **everything()), "sda")
    [saturated] = verdict.as_json()
    assert saturated["cause"] == "saturated" and saturated["confidence"] == "high"
    assert saturated["evidence"]["aqu-sz"] == 60.0 and saturated["evidence"]["nr_requests"] == 64


@pytest.mark.parametrize(
    ("dirty_kb", "confidence"), [(250000, "medium"), (450000, "high"), (150000, None)]
)
def test_dirty_over_the_background_threshold_while_writing_is_a_writeback_storm(
    dirty_kb: int, confidence: str | None
) -> None:
    memory = Memory(dirty_kb, 30000, 400000, 200000)
    verdict = diagnose(frame(rates(writes=300), memory=memory, **everything()), "sda")
    if confidence is None:
        assert causes(verdict) == ["none"]
        return
    [writeback] = verdict.as_json()
    assert writeback["cause"] == "writeback" and writeback["confidence"] == confidence
    assert writeback["evidence"]["dirty_kB"] == dirty_kb
    assert writeback["evidence"]["dirty_background_threshold_kB"] == 200000
    # Reads only: the dirty memory is not this device's business.
    reads = diagnose(frame(rates(reads=300), memory=memory, **everything()), "sda")
    assert causes(reads) == ["none"]


def test_more_time_in_the_scheduler_queue_than_in_the_device_is_queue_bound() -> None:
    op = OpLatency(Histogram(MappingProxyType({1: 100}), sum_ns=100 * 1_000_000), 400_000_000, 100)
    lat = LatencyFrame(RUNNING, MappingProxyType({"sda": DeviceLatency({"read": op})}), span_s=1.0)
    verdict = diagnose(frame(rates(reads=100), **everything(latency=lat)), "sda")
    [queue] = verdict.as_json()
    assert queue["cause"] == "queue" and queue["confidence"] == "high"
    assert queue["evidence"] == {
        "queue_ms_mean": 4.0,
        "device_ms_mean": 1.0,
        "queue_share_pct": 80.0,
    }


def test_cpu_pressure_is_the_cause_when_nothing_on_the_device_side_holds() -> None:
    verdict = diagnose(frame(rates(reads=50), pressure=psi(cpu_some=85.0), **everything()), "sda")
    [cpu] = verdict.as_json()
    assert cpu["cause"] == "cpu" and cpu["confidence"] == "high"
    assert cpu["evidence"]["cpu_some_avg10"] == 85.0
    assert "not the problem" not in cpu["text"]  # the figures did not say so
    mild = diagnose(frame(rates(reads=50), pressure=psi(cpu_some=10.0), **everything()), "sda")
    assert causes(mild) == ["none"]


def issuer(pid: int, comm: str, r_s: float) -> IssuerRow:
    return IssuerRow(pid, comm, comm, "/db", "blkio", r_s, 0.0, r_s * 4, 0.0)


def test_the_top_issuer_is_evidence_on_every_cause_never_a_cause() -> None:
    who = IssuersFrame(
        TRACER, MappingProxyType({"sda": (issuer(42, "fio", 900.0), issuer(7, "cron", 100.0))})
    )
    [none] = diagnose(frame(rates(reads=1000), **everything(issuers=who)), "sda").as_json()
    assert none["cause"] == "none"
    assert none["evidence"]["top_issuer"] == {"pid": 42, "comm": "fio", "share_pct": 90.0}
    parts = everything(cgroups=cgroups(98.0, 100), issuers=who)
    [throttled] = diagnose(frame(rates(reads=98), **parts), "sda").as_json()
    assert throttled["cause"] == "throttled"
    assert throttled["evidence"]["top_issuer"]["comm"] == "fio"
    assert "issuer" not in CAUSES


def test_failed_requests_are_errors() -> None:
    health = HealthFrame(
        MappingProxyType({"sda": DeviceHealth("smartctl", passed=True)}),
        MappingProxyType({"sda": 1.0}),
        MappingProxyType({"sda": 3}),
        new_errors=MappingProxyType({"sda": 3}),
    )
    verdict = diagnose(frame(rates(reads=10), **everything(health=health)), "sda")
    [errors] = verdict.as_json()
    assert errors["cause"] == "errors" and errors["evidence"] == {"new_io_errors": 3}


def test_causes_rank_by_confidence_then_the_fixed_order_and_the_line_lists_all() -> None:
    memory = Memory(250000, 30000, 400000, 200000)
    health = HealthFrame(
        MappingProxyType({"sda": DeviceHealth("smartctl", passed=True)}),
        MappingProxyType({"sda": 1.0}),
        MappingProxyType({"sda": 3}),
        new_errors=MappingProxyType({"sda": 3}),
    )
    parts = everything(cgroups=cgroups(98.0, 100), health=health)
    shown = frame(rates(reads=98, writes=50), memory=memory, **parts)
    verdict = diagnose(shown, "sda")
    assert causes(verdict) == ["throttled", "errors", "writeback"]
    assert [c.confidence for c in verdict.causes] == ["high", "high", "medium"]
    line = verdict.line()
    assert line.startswith("throttled by /db") and "+1" not in line
    assert all(c.text in line for c in verdict.causes)  # every cause, none cut to +N
    assert set(causes(verdict)) <= set(CAUSES)


def test_the_cgroups_are_walked_once_per_frame_however_many_devices_are_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from iotop_plus.sampling.cgroups import limits as cgroup_limits

    walks = []
    real = cgroup_limits.device_limits

    def counted(*args: Any, **kwargs: Any) -> Any:
        walks.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cgroup_limits, "device_limits", counted)
    shown = frame(rates(reads=98), **everything(cgroups=cgroups(98.0, 100)))
    for _ in range(5):
        assert causes(diagnose(shown, "sda")) == ["throttled"]
        assert causes(diagnose(shown, "sdb")) == ["none"]
    assert len(walks) == 1
    other = frame(rates(reads=98), **everything(cgroups=cgroups(50.0, 100)))
    assert "throttled" not in causes(diagnose(other, "sda"))
    assert len(walks) == 2


def stuck(oldest_s: float, reason: str = "frozen", device: str = "sda1") -> dict[str, Any]:
    """Every part present, and threads blocked on ``device`` (a partition of sda)."""
    group = BlockedGroup(
        reason=reason,
        wait="percpu_rwsem_wait",
        syscall="write",
        file="/data/f\x1b",
        mount="/data",
        device=device,
        cgroup="/app",
        count=3,
        pids=(7, 8),
        oldest_s=oldest_s,
        comm="pg",
        disk="sda" if device == "sda1" else device,
    )
    return everything(blocked=BlockedTasks((group,), 9, 0.0, True))


def test_threads_blocked_on_a_frozen_filesystem_are_the_cause_even_when_the_disk_is_idle() -> None:
    verdict = diagnose(frame(rates(busy_ms=0), **stuck(12.0)), "sda")
    [blocked] = verdict.as_json()
    assert blocked["cause"] == "blocked" and blocked["confidence"] == "high"
    assert blocked["evidence"]["threads"] == 3 and blocked["evidence"]["oldest_s"] == 12.0
    assert blocked["evidence"]["file"] == "/data/f\\x1b"
    assert blocked["text"] == (
        "3 threads blocked, frozen filesystem: write on /data/f\\x1b for 12 s (pid 7 pg)"
    )
    assert "blocked" in CAUSES


def test_a_short_wait_or_another_device_is_no_blocked_cause() -> None:
    assert causes(diagnose(frame(rates(busy_ms=0), **stuck(0.5)), "sda")) == ["none"]
    assert causes(diagnose(frame(rates(busy_ms=0), **stuck(30.0, device="sdb")), "sda")) == ["none"]
    medium = diagnose(frame(rates(reads=200), **stuck(2.0, reason="page_io")), "sda")
    assert [(c.cause, c.confidence) for c in medium.causes] == [("blocked", "medium")]
