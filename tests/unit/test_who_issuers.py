"""Who does each device's I/O (#24 items 1-2): the attributing tracer program, its parser on
captured output, and the frame's issuers part on a /proc tree the test writes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.frame.model import ProcessFrame
from iotop_plus.sampling.latency.hist import FAILED, LatencyFrame
from iotop_plus.sampling.latency.parser import TracerBatch, TracerParser, rwbs_of
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import rwbs_offsets, tracer_program
from iotop_plus.sampling.latency.tracer import Tracer
from iotop_plus.sampling.processes.issuers import (
    ESTIMATE,
    KERNEL,
    TRACER,
    IssuerReader,
    IssuersFrame,
    cgroup_of,
)
from iotop_plus.sampling.processes.rates import ProcessSample, TaskCounters, TaskRates

CAPTURED = Path(__file__).parent.parent / "fixtures" / "tracer" / "attribution-6.18.jsonl"
"""Real ``bpftrace -f json`` output of the attributing program (Linux 6.18, bpftrace 0.17):
a dd writing with O_DIRECT, then a buffered dd flushed by ``sync`` (the caller writes the
block device's pages itself, a kworker the rest), mypy reading, and another helper's fio on
loop devices. Its program followed no worker to its job (the kworker is charged by pid) and
printed ``@wb`` (``writeback_start`` per bdi), which the parser does not read."""
VDA = 254 << 20


def batches_of(text: str) -> list[TracerBatch]:
    parser = TracerParser()
    return [b for line in text.splitlines(keepends=True) if (b := parser.feed(line)) is not None]


def test_the_program_attributes_requests_only_while_issuers_are_wanted() -> None:
    plain = tracer_program(queue=False)
    who = tracer_program(queue=False, attribution=True)
    assert "block_io_start" not in plain and "@ow" not in plain and "curtask" not in plain
    assert "tracepoint:block:block_io_start {" in who
    # The issuer rides in the request's stamp: the pid at submission, packed with the time
    # at issue, read back at completion (no map operation of its own per request).
    assert "$p = (uint64)pid;" in who and "@ow" not in who
    assert "@is[args->dev, args->sector] = $p;" in who
    assert "@is[args->dev, args->sector] = ((nsecs & 2199023255551) << 23) | $p;" in who
    assert "$p = $t & 8388607;" in who
    assert "@ic__0[pid, cgroup, comm] = count();" in who  # who it is, once per pid and tick
    assert "@h__0[args->dev, args->rwbs, $e, $s, $p] = count();" in who
    # device time and sectors in one sum: one map operation fewer per request
    assert (
        "@dp__0[args->dev, args->rwbs, $p] = sum((($v + 128) >> 8) | (args->nr_sector << 36));"
        in who
    )
    assert "writeback" not in who and "curtask" not in who  # no jobs asked for
    assert "kprobe" not in who
    old = tracer_program(queue=False, attribution=True, submit="block_bio_queue")
    assert "tracepoint:block:block_bio_queue {" in old
    # With a probe's issuers too, the stamp stays the time and the pid waits in @ow.
    both = tracer_program(queue=False, attribution=True, issuers=True)
    assert "@ow[args->dev, args->sector] = $p;" in both


def test_maps_are_keyed_by_the_number_of_rwbs_where_its_offset_is_known() -> None:
    numeric = tracer_program(queue=True, rwbs_at={"block_rq_complete": 34, "block_rq_issue": 34})
    assert "$o = *(uint16 *)((uint64)args + 34);" in numeric
    assert "@h__0[args->dev, $o, $e, $s] = count();" in numeric
    assert "@qn__0[args->dev, $o] = count();" in numeric
    assert "args->rwbs" not in numeric
    # The number is the first two bytes of rwbs: decoded back to the same operations.
    for rwbs in ("R", "RA", "WS", "FW", "FF", "D", "W"):
        number = int.from_bytes(rwbs.encode()[:2].ljust(2, b"\0"), "little")
        assert rwbs_of(str(number)) == rwbs[:2]
    assert rwbs_of("WS") == "WS"


@pytest.mark.skipif(
    not os.path.isdir("/sys/kernel/tracing/events/block/block_rq_complete"),
    reason="no block tracepoints visible here (tracefs not mounted)",
)
def test_rwbs_offsets_come_from_this_kernels_tracepoint_format() -> None:
    fmt = Path("/sys/kernel/tracing/events/block/block_rq_complete/format").read_text()
    line = next(x for x in fmt.splitlines() if "rwbs[" in x)
    offset = int(line.split("offset:")[1].split(";")[0])
    assert rwbs_offsets(("block_rq_complete", "no_such_event")) == {"block_rq_complete": offset}


def test_captured_attribution_output_becomes_requests_per_device_and_pid() -> None:
    batches = batches_of(CAPTURED.read_text())
    last = batches[2]
    dd = last.attributed[(VDA, 23734)]
    assert dd.comm == "dd" and dd.cgroup_id == 1
    assert dd.op("write").count == 300  # dd count=300 oflag=direct
    assert dd.sectors == {"write": 2400}  # of 4 KiB each
    assert dd.op("write").max_ns == 125538
    flusher = last.attributed[(VDA, 30584)]
    assert flusher.comm == "kworker/u8:8" and flusher.sectors == {"write": 65792}
    # A pid whose request completes in a later tick keeps the identity it submitted with.
    assert batches[3].attributed[(VDA, 23732)].comm == "mypy"
    # The per-device histograms are the sums over the pids, as without attribution.
    per_pid = sum(io.op("write").count for (dev, _), io in last.attributed.items() if dev == VDA)
    assert last.ops[(VDA, "write")].device.count == per_pid


class CannedTracer(Tracer):
    """A tracer whose child never runs: the test pushes batches."""

    def __init__(self) -> None:
        super().__init__(queue=False, attribution=True)

    def start(self) -> None:
        self.attached.set()

    def push(self, batch: TracerBatch) -> None:
        self._batches.append(batch)
        self.ready.set()


def proc_tree(tmp_path: Path) -> Roots:
    """A /proc with dd (in a v1 blkio cgroup), sync (below the v2 root), mypy and a kworker,
    and a /sys where vda is 254:0."""
    proc, sys = tmp_path / "proc", tmp_path / "sys"

    def task(pid: int, comm: str, flags: int, cmdline: bytes, cgroup: str) -> None:
        d = proc / str(pid)
        d.mkdir(parents=True)
        (d / "stat").write_text(f"{pid} ({comm}) S 2 0 0 0 -1 {flags} 0 0 0 0 0 0\n")
        (d / "cmdline").write_bytes(cmdline)
        (d / "cgroup").write_text(cgroup)

    dd = b"dd\0if=/dev/zero\0of=/x\0oflag=direct\0"
    task(23734, "dd", 0x400000, dd, "7:blkio:/jobs/a\n0::/\n")
    task(23736, "sync", 0x400000, b"sync\0", "7:blkio:/\n0::/user.slice/t.scope\n")
    task(23732, "mypy", 0x400000, b"mypy\0iotop_plus\0", "7:blkio:/\n0::/\n")
    task(30584, "kworker/u8:8", 0x04208060, b"", "7:blkio:/\n0::/\n")
    (sys / "class" / "block" / "vda").mkdir(parents=True)
    (sys / "class" / "block" / "vda" / "dev").write_text("254:0\n")
    return Roots(proc=proc, sys=sys)


def traced_frames(roots: Roots) -> tuple[LatencyFrame, IssuersFrame | None]:
    tracer = CannedTracer()
    part = LatencyPart(make_tracer=lambda: tracer, check=lambda: (None, None), attribution=True)
    counters = {"vda": DiskCounters(254, 0, "vda", (0,) * 11, 11)}
    part.frame(counters, 0.0)
    for batch in batches_of(CAPTURED.read_text()):
        tracer.push(batch)
    latency = part.frame(counters, 1e12)
    return latency, IssuerReader(roots).frame(latency, None)


def test_issuers_name_pid_command_line_and_cgroup_and_fold_kernel_threads(tmp_path: Path) -> None:
    latency, issuers = traced_frames(proc_tree(tmp_path))
    assert issuers is not None and issuers.source == TRACER and not issuers.estimate
    who = {i.comm: i for i in issuers.of("vda")}
    assert set(who) == {"dd", "sync", "mypy", "bash", KERNEL}
    # bash (a pid this /proc does not have: it exited before the frame) keeps the comm the
    # tracer saw it submit with; it is no kernel thread.
    assert (who["bash"].pid, who["bash"].cmdline, who["bash"].cgroup) == (17168, None, None)
    dd = who["dd"]
    assert dd.pid == 23734 and dd.cmdline == "dd if=/dev/zero of=/x oflag=direct"
    assert (dd.cgroup, dd.cgroup_source) == ("/jobs/a", "blkio")
    assert (who["sync"].cgroup, who["sync"].cgroup_source) == ("/user.slice/t.scope", "v2")
    span = latency.span_s or 0.0
    traced = batches_of(CAPTURED.read_text())[1:]  # the first tick covers the attaching
    dds = [b.attributed[(VDA, 23734)] for b in traced if (VDA, 23734) in b.attributed]
    writes = sum(io.op("write").count for io in dds)
    sectors = sum(io.sectors.get("write", 0) for io in dds)
    assert dd.w_s == pytest.approx(writes / span) and dd.r_s == 0
    assert dd.wkB_s == pytest.approx(sectors * 512 / 1024 / span)
    kernel = who[KERNEL]
    # A kworker charged by its pid (no job followed): the kernel's, and never writeback
    # by guess.
    assert kernel.pid is None and kernel.cmdline is None and kernel.kind == "other"
    assert not kernel.writeback
    # Busiest first, by IOPS.
    order = [i.iops for i in issuers.of("vda")]
    assert order == sorted(order, reverse=True)
    shares = {s.cgroup: s for s in issuers.cgroups["vda"]}
    assert shares["/jobs/a"].w_s == pytest.approx(dd.w_s)
    assert shares["/jobs/a"].write == dd.write  # the cgroup's latency: its one process's
    assert shares["/jobs/a"].read.p50_ms is None


def test_snapshot_json_of_an_issuer_has_exactly_the_ruled_keys(tmp_path: Path) -> None:
    _, issuers = traced_frames(proc_tree(tmp_path))
    assert issuers is not None
    entries = [i.to_json() for i in issuers.of("vda")]
    keys = {"pid", "comm", "cmdline", "cgroup", "cgroup_source", "r/s", "w/s", "rkB/s", "wkB/s"}
    for entry in entries:
        extra = {"kind", "for", "writeback"} if entry["comm"] == KERNEL else set()
        assert set(entry) == keys | {"latency"} | extra
        assert set(entry["latency"]) == {"read", "write"}
        assert set(entry["latency"]["write"]) == {"p50_ms", "p99_ms", "max_ms"}
    dd = next(e for e in entries if e["comm"] == "dd")
    assert dd["latency"]["write"]["max_ms"] == pytest.approx(0.126, abs=0.001)
    assert dd["latency"]["read"] == {"p50_ms": None, "p99_ms": None, "max_ms": None}


def test_recorded_issuers_read_back_with_the_same_figures(tmp_path: Path) -> None:
    _, issuers = traced_frames(proc_tree(tmp_path))
    assert issuers is not None
    back = IssuersFrame.from_record(issuers.to_record())
    assert back is not None
    assert [i.to_json() for i in back.of("vda")] == [i.to_json() for i in issuers.of("vda")]
    assert IssuersFrame.from_record({"devices": "nonsense"}) is None


def test_proc_cgroup_gives_the_v2_path_below_the_root_else_the_blkio_path() -> None:
    assert cgroup_of("7:blkio:/a\n0::/b.slice\n") == ("/b.slice", "v2")
    assert cgroup_of("7:blkio:/a\n0::/\n") == ("/a", "blkio")
    assert cgroup_of("7:cpu,blkio:/a/b\n") == ("/a/b", "blkio")
    assert cgroup_of("0::/\n") == ("/", "v2")
    assert cgroup_of("garbage") == (None, None)


def test_without_the_tracer_issuers_are_an_estimate_from_proc_io(tmp_path: Path) -> None:
    """This test process holds a file open on the root filesystem's block device: its
    /proc/PID/io rates are charged to that device, marked as an estimate."""
    holder = tmp_path / "held"
    holder.write_bytes(b"x")
    dev = os.stat(holder).st_dev
    roots = Roots()
    name = os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
    if not os.path.exists(f"/sys/class/block/{name}"):
        pytest.skip("the test directory is not on a block device here")
    me = os.getpid()
    task = TaskCounters(me, me, 1, "pytest", "pytest -q", 0, "root", "R", 1, None, None)
    rates = TaskRates(task, 4096.0, 8192.0, None, None, None)
    sample = ProcessSample(time.monotonic(), time.time(), None, {task.key: task}, None)  # type: ignore[arg-type]
    processes = ProcessFrame(
        sample, MappingProxyType({task.key: rates}), MappingProxyType({}), MappingProxyType({})
    )
    failed = LatencyFrame(FAILED, status="latency needs root (it runs bpftrace)")
    with open(holder, "rb"):
        issuers = IssuerReader(roots).frame(failed, processes)
    assert issuers is not None and issuers.source == ESTIMATE and issuers.estimate
    assert issuers.status is not None and "latency needs root" in issuers.status
    mine = next(i for i in issuers.of(name) if i.pid == me)
    assert mine.r_s is None and mine.w_s is None
    assert (mine.rkB_s, mine.wkB_s) == (4.0, 8.0)
    assert IssuerReader(roots).frame(failed, None) is None  # no processes read: nothing to say


def test_the_snapshot_table_names_each_devices_top_three_issuers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse
    from types import SimpleNamespace

    from iotop_plus.commands.snapshot_issuers import who_lines

    latency, issuers = traced_frames(proc_tree(tmp_path))
    frame: Any = SimpleNamespace(parts={"issuers": issuers}, latency=latency)
    frame.get = lambda part: frame.parts.get(part.key)
    asked = argparse.Namespace(issuers=True)
    [line] = who_lines(asked, ["vda", "sdz"], frame).splitlines()
    assert line.startswith("who vda: kernel other ")  # the kworker did the most requests
    assert line.count(" · ") == 2 and "dd[23734] " in line and " IO/s p99 " in line
    assert who_lines(argparse.Namespace(issuers=False), ["vda"], frame) == ""
    failed: Any = SimpleNamespace(latency=LatencyFrame(FAILED, status="needs root"))
    failed.get = lambda part: None
    assert who_lines(asked, ["vda"], failed) == ""
    assert capsys.readouterr().err == (
        "iotop-plus: --issuers needs the block tracer: needs root; no who lines\n"
    )
