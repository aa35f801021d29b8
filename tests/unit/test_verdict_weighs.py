"""A verdict that weighs, on hand-made frames: saturation judged on the device's own busy
time, depth and await against its quiet baseline (steady as well as rising), the service time
where there is no baseline, ``capped`` when something below explains it, CPU pressure a
cause only when nothing on the device side holds, and writeback seen without the tracer."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.sampling.cgroups.files import IoLimits
from iotop_plus.sampling.cgroups.reader import CgroupRates, CgroupSample, CgroupStat, IoRates
from iotop_plus.sampling.disks.disk_writes import disk_writes
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.frame.model import CgroupFrame, Frame
from iotop_plus.sampling.memory.dirty import Memory
from iotop_plus.sampling.topology.inventory import BlockDevice, Inventory
from iotop_plus.why.diagnosis import diagnose
from iotop_plus.why.lookback import Lookback, LookbackFeed
from iotop_plus.why.saturation import below
from tests.unit.test_verdict_line import QUIET_MEMORY, psi, rates


def busy(await_ms: float = 100.0, iops: int = 300, busy_ms: int = 1000) -> DeviceRates:
    """A device held at ``iops`` with a queue of iops x await (32 at 300 x ~107 ms)."""
    return rates(reads=iops, await_ms=await_ms, busy_ms=busy_ms)


QUIET = rates(reads=300, await_ms=3.0, busy_ms=900)  # aqu-sz 0.9: a quiet frame
LOOP = BlockDevice("loop0", 7, 0, "loop", loop_dio=False, device_class="loop")


def frame(
    devices: Mapping[str, DeviceRates | None],
    *,
    inventory: Sequence[BlockDevice] = (),
    seq: int = 0,
    nr_requests: int = 128,
    cpu: float = 0.0,
    memory: Memory | None = QUIET_MEMORY,
    **parts: Any,
) -> Frame:
    """``parts``: the frame's own fields or registered parts' values by key."""
    fields = {f.name for f in dataclasses.fields(Frame)}
    values = {"memory": memory, **{k: v for k, v in parts.items() if k not in fields}}
    return Frame(
        sample=Sample(100.0 + seq, 1795669200.0 + seq, MappingProxyType({})),
        rates=MappingProxyType(dict(devices)),
        inventory=Inventory({d.name: d for d in inventory}),
        inventory_changed=False,
        nr_requests=MappingProxyType({n: nr_requests for n in devices}),
        elapsed_s=1.0,
        ever_used=frozenset(devices),
        seq=seq,
        pressure=psi(cpu_some=cpu),
        parts={k: v for k, v in values.items() if v is not None},
        **{k: v for k, v in parts.items() if k in fields},
    )


def judged(now: DeviceRates, earlier: Sequence[DeviceRates], quiet: Sequence[float]) -> list[str]:
    lookback = Lookback(rates={"sda": earlier}, quiet=lambda _d: quiet)
    return [c.cause for c in diagnose(frame({"sda": now}), "sda", lookback).causes]


def test_a_steadily_saturated_device_is_saturated_not_only_a_rising_one() -> None:
    steady = [busy()] * 4
    verdict = diagnose(
        frame({"sda": busy()}), "sda", Lookback(rates={"sda": steady}, quiet=lambda _d: [3.0])
    )
    [saturated] = verdict.as_json()
    assert saturated["cause"] == "saturated" and saturated["confidence"] == "high"
    evidence = saturated["evidence"]
    assert evidence["quiet_await"] == 3.0 and evidence["frames"] == "5 of 5"
    assert evidence["aqu-sz"] == 30.0 and evidence["%util"] == 100.0


def test_four_of_the_last_five_frames_are_needed_and_the_last_must_be_one() -> None:
    assert judged(busy(), [QUIET, busy(), busy(), busy()], [3.0]) == ["saturated"]
    assert judged(busy(), [QUIET, QUIET, busy(), busy()], [3.0]) == ["none"]  # 3 of 5
    assert judged(QUIET, [busy()] * 4, [3.0]) == ["none"]  # it is over
    # Await under 4x the quiet baseline is a busy device, not a saturated one.
    assert judged(busy(), [busy()] * 4, [30.0]) == ["none"]
    # A shallow queue at 100 % busy is not saturation (aqu-sz 3).
    shallow = rates(reads=300, await_ms=10.0, busy_ms=1000)
    assert judged(shallow, [shallow] * 4, [1.0]) == ["none"]


def test_the_baseline_is_the_median_await_of_the_quiet_frames_before() -> None:
    feed = LookbackFeed()
    awaits = [1.0, 9.0, 2.0, 3.0, 2.5]
    for seq, value in enumerate(awaits, 1):
        feed.add(frame({"sda": rates(reads=100, await_ms=value, busy_ms=300)}, seq=seq))
    deep = rates(reads=100, await_ms=50.0, busy_ms=1000)  # aqu-sz 5: not quiet
    idle = rates(busy_ms=0)  # no I/O: an await of 0 is no baseline
    feed.add(frame({"sda": deep}, seq=6))
    feed.add(frame({"sda": idle}, seq=7))
    assert feed.before(frame({}, seq=8)).baseline("sda") == 2.5  # median of 1, 9, 2, 3, 2.5
    assert feed.before(frame({}, seq=3)).baseline("sda") == 5.0  # only frames 1 and 2
    assert feed.before(frame({}, seq=1)).baseline("sda") is None
    assert [f.seq for f in feed.before(frame({}, seq=8)).frames] == [3, 4, 5, 6, 7]


def test_the_feed_takes_a_frame_once_and_starts_again_with_a_new_source() -> None:
    feed = LookbackFeed()
    for seq in (1, 2, 2, 3):
        feed.add(frame({"sda": QUIET}, seq=seq))
    assert [f.seq for f in feed.before(frame({}, seq=4)).frames] == [1, 2, 3]
    feed.add(frame({"sda": QUIET}, seq=6))  # a gap: frames 4 and 5 were never seen
    assert [f.seq for f in feed.before(frame({}, seq=7)).frames] == [6]
    assert len(feed.quiet_before(7)("sda")) == 4
    feed.add(frame({"sda": busy()}, seq=1))  # a new source
    assert feed.quiet_before(9)("sda") == []


def test_without_a_baseline_the_service_time_judges_a_device_that_serves_one_at_a_time() -> None:
    held = busy(await_ms=107.0)  # 300 reads of 107 ms: aqu-sz 32, service 3.3 ms
    verdict = diagnose(frame({"loop0": held}, inventory=[LOOP]), "loop0")
    [saturated] = verdict.as_json()
    assert saturated["cause"] == "saturated" and saturated["confidence"] == "medium"
    assert saturated["evidence"]["service_ms"] == 3.333
    # Direct I/O: several requests at once, util / IOPS is not a request's time.
    dio = BlockDevice("loop0", 7, 0, "loop", loop_dio=True, device_class="loop")
    assert diagnose(frame({"loop0": held}, inventory=[dio]), "loop0").held == ()
    nvme = BlockDevice("nvme0n1", 259, 0, "nvme", device_class="nvme")
    assert diagnose(frame({"nvme0n1": held}, inventory=[nvme]), "nvme0n1").held == ()
    hdd = BlockDevice("sdb", 8, 16, "disk", rotational=True, device_class="hdd")
    assert diagnose(frame({"sdb": held}, inventory=[hdd]), "sdb").held == ("saturated",)


def test_a_full_queue_is_saturated_as_before() -> None:
    full = busy(await_ms=400.0, iops=300)  # aqu-sz 120 of 128
    assert diagnose(frame({"sda": full}), "sda").as_json()[0]["confidence"] == "high"


def test_cpu_pressure_never_clears_a_saturated_device_it_qualifies_it() -> None:
    lookback = Lookback(rates={"sda": [busy()] * 4}, quiet=lambda _d: [3.0])
    verdict = diagnose(frame({"sda": busy()}, cpu=97.0), "sda", lookback)
    assert verdict.held == ("saturated",)  # not cpu
    [cause] = verdict.causes
    assert cause.evidence["cpu_some_avg10"] == 97.0
    assert cause.text.endswith("(CPU pressure 97 % may inflate await)")
    assert "not the problem" not in verdict.line()
    # Nothing on the device side: then the CPU is the cause.
    assert diagnose(frame({"sda": QUIET}, cpu=97.0), "sda").held == ("cpu",)


def limited(device: str, devno: str, used_iops: float, riops: int) -> CgroupFrame:
    """A v2 cgroup /fio with ``riops`` on ``device``, reading ``used_iops`` from it."""
    keys = {"rbps": None, "wbps": None, "riops": riops, "wiops": None}
    stat = CgroupStat(
        "/fio", 1, MappingProxyType({}), None, IoLimits({devno: keys}, source="io.max")
    )
    sample = CgroupSample(
        100.0,
        1795669200.0,
        "v2",
        "/sys/fs/cgroup",
        MappingProxyType({"/fio": stat}),
        MappingProxyType({devno: device}),
    )
    r = IoRates(0.0, 0.0, used_iops, 0.0, 0.0)
    return CgroupFrame(
        sample, MappingProxyType({"/fio": CgroupRates(r, MappingProxyType({devno: r}))})
    )


def test_capped_replaces_saturated_when_the_device_below_is_throttled() -> None:
    loop0 = BlockDevice("loop0", 7, 0, "loop", loop_dio=False, loop_backing_device="loop1p1")
    loop1 = BlockDevice("loop1", 7, 1, "loop", loop_dio=False)
    part = BlockDevice("loop1p1", 259, 3, "part", parent="loop1")
    inventory = [loop0, loop1, part]
    devices = {"loop0": busy(await_ms=107.0), "loop1": rates(reads=300, busy_ms=200)}
    shown = frame(devices, inventory=inventory, cpu=80.0, cgroups=limited("loop1", "7:1", 297, 300))
    verdict = diagnose(shown, "loop0")
    assert verdict.held == ("capped",)
    [capped] = verdict.as_json()
    evidence = capped["evidence"]
    assert (evidence["below"], evidence["below_cause"]) == ("loop1", "throttled")
    assert (evidence["cgroup"], evidence["limit"], evidence["limit_value"]) == (
        "/fio",
        "riops",
        300,
    )
    assert evidence["cpu_some_avg10"] == 80.0 and "loop1" in capped["text"]
    # The limit not reached: saturated, with nothing below to explain it.
    loose = frame(devices, inventory=inventory, cgroups=limited("loop1", "7:1", 100, 300))
    assert diagnose(loose, "loop0").held == ("saturated",)


def test_capped_by_a_saturated_device_below_a_dm_volume() -> None:
    dm = BlockDevice("dm-0", 253, 0, "dm", slaves=("sdb",))
    sdb = BlockDevice("sdb", 8, 16, "disk", rotational=True, device_class="hdd")
    devices = {"dm-0": busy(await_ms=400.0), "sdb": busy(await_ms=400.0)}
    [capped] = diagnose(frame(devices, inventory=[dm, sdb]), "dm-0").as_json()
    assert capped["cause"] == "capped"
    assert (capped["evidence"]["below"], capped["evidence"]["below_cause"]) == ("sdb", "saturated")


@pytest.mark.parametrize(
    ("model", "network"),
    [
        ("Amazon Elastic Block Store", True),
        ("PersistentDisk", True),
        ("nvme_card-pd", True),
        ("Virtual Disk", True),
        ("MSFT NVMe Accelerator v1.0", True),
        ("Amazon EC2 NVMe Instance Storage", False),
        ("Samsung SSD 980 PRO 1TB", False),
    ],
)
def test_a_network_volume_at_its_cap_is_capped(model: str, network: bool) -> None:
    disk = BlockDevice("nvme1n1", 259, 1, "nvme", model=model, device_class="nvme")
    full = busy(await_ms=400.0)  # a full queue: saturated on its own figures
    [cause] = diagnose(frame({"nvme1n1": full}, inventory=[disk]), "nvme1n1").as_json()
    assert cause["cause"] == ("capped" if network else "saturated")
    if network:
        assert cause["evidence"]["below_cause"] == "network volume"
        assert cause["evidence"]["model"] == model


def test_below_names_whole_disks_under_loop_dm_and_md_devices() -> None:
    inventory = Inventory(
        {
            "loop0": BlockDevice("loop0", 7, 0, "loop", loop_backing_device="vda1"),
            "vda1": BlockDevice("vda1", 254, 1, "part", parent="vda"),
            "md0": BlockDevice("md0", 9, 0, "md", slaves=("sdb1", "sdc1", "sdb2")),
            "sdb1": BlockDevice("sdb1", 8, 17, "part", parent="sdb"),
            "sdb2": BlockDevice("sdb2", 8, 18, "part", parent="sdb"),
            "sdc1": BlockDevice("sdc1", 8, 33, "part", parent="sdc"),
        }
    )
    assert below(inventory, "loop0") == ("vda",)
    assert below(inventory, "md0") == ("sdb", "sdc")
    assert below(inventory, "vda1") == () and below(inventory, "nope") == ()


def storm(dirty_kb: int, written: int) -> Memory:
    return Memory(dirty_kb, 20000, 400000, 200000, written_pages=written)


def test_writeback_without_the_tracer_dirty_at_the_threshold_while_nr_written_rises() -> None:
    writes = rates(writes=500, await_ms=5.0, busy_ms=600)
    # The flusher drains dirty in bursts: 190 MB, then nothing, then back up.
    dirty = (190000, 8000, 0)
    earlier = [frame({"sda": writes}, memory=storm(d, 1000 * i)) for i, d in enumerate(dirty, 1)]
    now = frame({"sda": writes}, memory=storm(50000, 4000))
    [writeback] = diagnose(now, "sda", Lookback(earlier)).as_json()
    assert writeback["cause"] == "writeback" and writeback["confidence"] == "medium"
    assert writeback["evidence"]["nr_written_rise"] == 1000
    # nr_written flat: nothing is being written back.
    flat = frame({"sda": writes}, memory=storm(50000, 3000))
    assert diagnose(flat, "sda", Lookback(earlier)).held == ()
    # Too few frames to say; or dirty never near the threshold.
    assert diagnose(now, "sda", Lookback(earlier[-1:])).held == ()
    low = [frame({"sda": writes}, memory=storm(150000, 1000 * i)) for i in range(1, 4)]
    assert diagnose(now, "sda", Lookback(low)).held == ()
    # The burst older than the last five frames does not count.
    older = [*earlier, *(frame({"sda": writes}, memory=storm(0, 3000)) for _ in range(4))]
    assert diagnose(now, "sda", Lookback(older)).held == ()
    # Reads only: not this device's business.
    reads = frame({"sda": rates(reads=500)}, memory=storm(50000, 4000))
    assert diagnose(reads, "sda", Lookback(earlier)).held == ()


def test_actual_writes_sum_the_disks_that_reach_hardware() -> None:
    inventory = [
        BlockDevice("vda", 254, 0, "disk"),
        BlockDevice("vda1", 254, 1, "part", parent="vda"),
        BlockDevice("sdb", 8, 16, "disk"),
        BlockDevice("loop0", 7, 0, "loop"),
        BlockDevice("dm-0", 253, 0, "dm"),
        BlockDevice("md0", 9, 0, "md"),
        BlockDevice("zram0", 252, 0, "zram"),
        BlockDevice("nbd0", 43, 0, "disk"),
    ]
    writes = rates(writes=100)  # 100 writes of 4 KiB
    shown = frame({d.name: writes for d in inventory}, inventory=inventory)
    found = disk_writes(shown)
    assert found is not None and found.devices == ("vda", "sdb")
    assert found.write_bps == 2 * 100 * 4096
    assert found.names(shown=1) == "vda +1"


def test_snapshot_judges_each_report_with_the_reports_before_it_and_issuers_print_why() -> None:
    import argparse

    from iotop_plus.commands.snapshot_diagnosis import Reports, add_diagnosis, render_verdicts

    reports = Reports()
    asked = argparse.Namespace(issuers=True, diagnose=False)
    lines = []
    for k in range(8):
        shown = frame({"sda": QUIET if k < 3 else busy()})  # hand-made frames: seq 0
        disks: list[dict[str, Any]] = [{"disk_device": "sda"}]
        add_diagnosis(disks, shown, reports)  # JSON and table judge the same report once
        lines.append(render_verdicts(asked, ["sda"], shown, reports))
        assert disks[0]["diagnosis"][0]["text"] in lines[-1]
    assert all(line.startswith("why sda: ") and line.endswith("\n") for line in lines)
    assert "no clear cause" in lines[5]  # 3 of the last 5 reports
    assert "saturated" in lines[6] and "in 4 of the last 5 frames" in lines[6]
    assert "in 5 of the last 5 frames" in lines[7] and "its quiet 3.00 ms" in lines[7]
    assert render_verdicts(argparse.Namespace(), ["sda"], shown, reports) == ""


def test_the_exporter_judges_each_frame_with_the_frames_before_it() -> None:
    from iotop_plus.export.view import ExportView
    from iotop_plus.export.why import diagnosis_families
    from iotop_plus.why.verdicts import Judge

    judge = Judge()  # the exporter's sampler judges each frame it reads, in turn

    def causes_at(shown: Frame) -> set[str]:
        view = ExportView(frame=judge.judged(shown, ("sda",)), devices=("sda",))
        [family] = diagnosis_families(view)
        assert "capped" in family.documentation and "issuer" not in family.documentation
        return {s.labels["cause"] for s in family.samples}

    seen = [causes_at(frame({"sda": QUIET if k < 3 else busy()}, seq=k + 1)) for k in range(8)]
    assert seen[:6] == [{"none"}] * 6 and seen[6:] == [{"saturated"}] * 2
    assert causes_at(frame({"sda": busy()}, seq=8)) == {"saturated"}  # the same frame again
    assert causes_at(frame({"sda": busy()}, seq=1)) == {"none"}  # a new source: no baseline


def test_writeback_verdict_names_the_top_dirtier_when_the_frame_carries_files() -> None:
    from iotop_plus.sampling.files.model import DeviceFiles, Dirtier, FilesFrame

    writes = rates(writes=500, await_ms=5.0, busy_ms=600)
    files = FilesFrame(
        {"sda": DeviceFiles(dirtiers=(Dirtier(4242, "dd", "dd of=big", None, 3 << 20, 0.9),))}
    )
    over = storm(250000, 4000)  # dirty over the background threshold
    [plain] = diagnose(frame({"sda": writes}, memory=over), "sda", Lookback([])).as_json()
    assert "dirtied by" not in plain["text"] and "top_dirtier" not in plain["evidence"]
    now = frame({"sda": writes}, memory=over, files=files)
    [writeback] = diagnose(now, "sda", Lookback([])).as_json()
    assert writeback["cause"] == "writeback"
    assert writeback["evidence"]["top_dirtier"] == {"pid": 4242, "comm": "dd", "share_pct": 90.0}
    assert writeback["text"].endswith("; dirtied by dd[4242] (90 %)")


def test_snapshot_writeback_issuer_entry_lists_the_dirtiers() -> None:
    from iotop_plus.commands.snapshot_issuers import add_issuers
    from iotop_plus.sampling.files.model import DeviceFiles, Dirtier, FilesFrame
    from iotop_plus.sampling.processes.issuers import TRACER, Issuer, IssuersFrame

    kernel = Issuer(None, "kernel", None, None, None, 0.0, 10.0, 0.0, 4096.0, kind="writeback")
    dd = Issuer(7, "dd", "dd of=x", None, None, 0.0, 1.0, 0.0, 4.0)
    issuers = IssuersFrame(TRACER, {"sda": (kernel, dd)})
    files = FilesFrame({"sda": DeviceFiles(dirtiers=(Dirtier(7, "dd", "dd of=x", "/a", 9, 1.0),))})
    disks: list[dict[str, Any]] = [{"disk_device": "sda"}]
    add_issuers(disks, frame({"sda": None}, issuers=issuers, files=files))
    kernel_doc, dd_doc = disks[0]["issuers"]
    assert kernel_doc["writeback"] is True
    assert kernel_doc["dirtiers"] == [
        {"pid": 7, "comm": "dd", "cmdline": "dd of=x", "cgroup": "/a", "bytes": 9, "share": 1.0}
    ]
    assert "dirtiers" not in dd_doc
    add_issuers(disks, frame({"sda": None}, issuers=issuers))  # no files: no dirtiers key
    assert "dirtiers" not in disks[0]["issuers"][0]
