"""The durability probe's reading of canned results: fdatasync latency, the call-out, the
suggestion, and a method refused O_DIRECT in the plan."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.probe import durability
from iotop_plus.probe.durability_plan import (
    DeviceFacts,
    MethodResult,
    callout,
    device_kind,
    durability_json,
    plan,
    suggest,
)
from iotop_plus.probe.fio_argv import build_argv
from iotop_plus.probe.fio_parse import parse_result
from iotop_plus.probe.preflight import ExperimentError
from iotop_plus.probe.run_types import DirectIORefused
from iotop_plus.probe.target import ProbeTarget
from iotop_plus.roots import Roots

NVME = DeviceFacts("nvme0n1", "nvme0n1", "write back", False, False, "physical")
HDD = DeviceFacts("sda1", "sda", "write back", False, True, "physical")
LOOP = DeviceFacts("loop3", "loop3", "write back", False, False, "virtual")


def fio_doc(sync: dict[str, Any]) -> dict[str, Any]:
    lat = {"mean": 1000.0, "percentile": {"50.000000": 800, "99.000000": 2000}}
    write = {
        "iops": 500.0,
        "bw": 4000,
        "io_bytes": 8192 * 500,
        "total_ios": 500,
        "runtime": 1000,
        "clat_ns": lat,
        "slat_ns": {"mean": 0.0},
        "lat_ns": {"mean": 1000.0},
    }
    return {"jobs": [{"error": 0, "write": write, "sync": sync, "usr_cpu": 1, "sys_cpu": 2}]}


def test_fdatasync_latency_is_read_though_fio_counts_no_sync_ios() -> None:
    method = plan(1)[1]  # fdatasync x1
    sync = {
        "total_ios": 0,
        "lat_ns": {"N": 500, "mean": 5e6, "min": 1, "max": 9e6, "percentile": {"50.000000": 4e6}},
    }
    result = parse_result(
        fio_doc(sync), method.preset, method.preset.params, target="t", device=None
    )
    assert result.fsync is not None and result.fsync.percentile("p50") == 4000.0
    none = parse_result(
        fio_doc({"total_ios": 0, "lat_ns": {"N": 0, "mean": 0.0}}),
        method.preset,
        method.preset.params,
        target="t",
        device=None,
    )
    assert none.fsync is None


def test_each_method_gives_fio_the_pg_test_fsync_options() -> None:
    target = ProbeTarget("file", Path("/d"), None, "sda", 16 * 2**20, readonly=False)
    argvs = {
        m.label: build_argv("fio", m.preset, m.preset.params, target, "/f", span=m.layout.span)
        for m in plan(2)
    }
    common = ["--rw=write", "--ioengine=psync", "--time_based", "--allow_file_create=0"]
    for label, argv in argvs.items():
        assert all(option in argv for option in common), label
    assert {"--bs=8k", "--size=8k", "--sync=dsync", "--direct=1"} <= set(argvs["open_datasync x1"])
    assert {"--size=16k", "--fdatasync=2", "--direct=0"} <= set(argvs["fdatasync x2"])
    assert {"--size=8k", "--fsync=1"} <= set(argvs["fsync x1"])
    assert {"--sync=sync", "--direct=1", "--size=16k"} <= set(argvs["open_sync x2"])
    assert {"--bs=2300", "--size=22m", "--fdatasync=1"} <= set(argvs["etcd x1"])
    assert plan(2)[0].layout.open_flags == os.O_DIRECT | os.O_DSYNC


@pytest.mark.parametrize(
    ("facts", "flush_us", "said"),
    [
        (NVME, 20.0, "durable only with power-loss protection"),
        (NVME, 400.0, None),  # a flush flash can do
        (HDD, 300.0, "durable only with power-loss protection"),
        (HDD, 4000.0, None),
        (replace(NVME, write_cache="write through"), 5.0, None),
        (LOOP, 5.0, "virtual device: durability depends on the host"),
        (replace(NVME, queue_device="vda", kind="virtual"), 5.0, "virtual device"),
        (replace(NVME, kind=None), 5.0, None),  # dm, md, mmc...: no call-out
        (NVME, None, None),  # no flush seen
    ],
)
def test_the_durability_call_out(
    facts: DeviceFacts, flush_us: float | None, said: str | None
) -> None:
    note = callout(facts, flush_us)
    if said is None:
        assert note is None
    else:
        assert note is not None and said in note


def test_device_kinds() -> None:
    assert device_kind("loop0", "/sys/devices/virtual/block/loop0") == "virtual"
    assert device_kind("vda", "/sys/devices/pci0000:00/0000:00:04.0/virtio2/block/vda") == "virtual"
    assert device_kind("xvda", "") == "virtual"
    assert device_kind("sda", "/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/block/sda") == (
        "physical"
    )
    assert device_kind("sda", "/sys/devices/pci0000:00/0000:00:05.0/virtio3/host0/block/sda") == (
        "virtual"
    )
    assert device_kind("nvme0n1", "/sys/devices/pci0000:00/nvme/nvme0/nvme0n1") == "physical"
    assert device_kind("dm-0", "/sys/devices/virtual/block/dm-0") is None


def canned(ops: dict[str, float], flushes: int | None = 10_000) -> list[MethodResult]:
    out = [
        MethodResult(name, 1, ops.get(name), 100.0, 300.0, device_flushes=flushes)
        for name in ("open_datasync", "fdatasync", "fsync", "open_sync")
    ]
    out.append(MethodResult("etcd", 1, 900.0, 900.0, 12_000.0, device_flushes=flushes))
    return out


def test_the_fastest_honest_method_is_suggested() -> None:
    s = suggest(
        canned({"open_datasync": 2000, "fdatasync": 1000, "fsync": 900, "open_sync": 1500}),
        NVME,
        None,
    )
    assert s.fastest == "open_datasync" and s.wal_sync_method == "open_datasync"
    assert s.etcd_p99_ok is False
    assert any("over etcd's 10 ms" in line for line in s.lines)


def test_the_default_stays_when_the_fastest_is_within_ten_percent() -> None:
    s = suggest(canned({"open_datasync": 1050, "fdatasync": 1000, "fsync": 900}), NVME, None)
    assert s.fastest == "open_datasync" and s.wal_sync_method == "fdatasync"


def test_a_method_without_device_flushes_is_not_honest() -> None:
    methods = canned({"open_datasync": 2000, "fdatasync": 1000}, flushes=None)
    methods[0] = replace(methods[0], device_flushes=0)  # write-back cache, no FUA, no flush
    s = suggest(methods, NVME, None)
    assert s.fastest == "fdatasync"
    assert any("not counted: open_datasync" in line for line in s.lines)
    # With FUA the write itself is durable: no flush is needed.
    assert suggest(methods, replace(NVME, fua=True), None).fastest == "open_datasync"


def test_a_memory_filesystem_gets_no_setting_and_the_call_out_is_carried() -> None:
    memory = DeviceFacts(None, None, None, None, None, None)
    s = suggest(canned({"fdatasync": 1000}), memory, None)
    assert s.wal_sync_method is None and "nothing here is durable" in s.lines[0]
    note = "virtual device: durability depends on the host"
    assert s.lines[-1] != note
    assert suggest(canned({"fdatasync": 1000}), LOOP, note).lines[-1] == note


class RefusingRunner:
    """Runs nothing: O_DIRECT methods are refused, the others fail the test if reached."""

    trace = False

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.seen: list[str] = []

    def tracing(self) -> Any:
        import contextlib

        return contextlib.nullcontext()

    async def run(self, request: Any, on_progress: Any = None) -> Any:
        self.seen.append(request.preset.name)
        raise DirectIORefused(
            "the filesystem refuses to open a file with O_DIRECT (Invalid argument)"
        )


def test_a_refused_method_is_null_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = ProbeTarget("file", tmp_path, None, None, 16 * 2**20, readonly=False)
    monkeypatch.setattr(durability, "plan_first", lambda *a: target)
    runner = RefusingRunner(Roots())
    result = asyncio.run(durability.run_durability(runner, str(tmp_path), runtime_s=1))  # type: ignore[arg-type]
    doc = durability_json(result)
    assert len(doc["methods"]) == 9 and len(runner.seen) == 9
    for m in doc["methods"]:
        assert m["ops_per_s"] is None and m["p50_us"] is None and "O_DIRECT" in m["reason"]


def test_a_device_target_is_refused_before_anything_runs() -> None:
    import stat

    def is_block(path: Path) -> bool:
        try:
            return stat.S_ISBLK(path.stat().st_mode)
        except OSError:  # gone meanwhile
            return False

    # Not a loop device: on a busy host their nodes come and go under the test.
    device = next(
        (
            p
            for p in sorted(Path("/dev").iterdir())
            if not p.name.startswith("loop") and is_block(p)
        ),
        None,
    )
    if device is None:
        pytest.skip("no block device node in /dev")
    runner = RefusingRunner(Roots())
    with pytest.raises(ExperimentError, match="block device"):
        asyncio.run(durability.run_durability(runner, str(device), runtime_s=1))  # type: ignore[arg-type]
    assert runner.seen == []
