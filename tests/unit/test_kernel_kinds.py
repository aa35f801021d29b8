"""The kernel's own I/O named for what it is: the tracer follows a workqueue worker to its
job, the parser names the jobs, and the issuers list one kernel entry per kind and whom it is
for (writeback, loop, throttle, journal, other), in JSON and recordings alike."""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType, SimpleNamespace

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import DiskCounters
from iotop_plus.sampling.latency.hist import JOB_FLAG, KernelJob, LatencyFrame, PidIO
from iotop_plus.sampling.latency.parser import TracerBatch, TracerParser
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import tracer_program
from iotop_plus.sampling.processes import kernel_kinds
from iotop_plus.sampling.processes.issuers import (
    KERNEL,
    Issuer,
    IssuerReader,
    IssuersFrame,
    issuer_text,
)
from iotop_plus.sampling.processes.kernel_kinds import KernelKinds, limited_cgroups
from tests.unit.test_who_issuers import CannedTracer

CAPTURED = Path(__file__).parent.parent / "fixtures" / "tracer" / "attribution-jobs-6.18.jsonl"
"""Real ``bpftrace -f json`` output of the attributing program with jobs and exits (Linux
6.18, bpftrace 0.17), while: a buffered dd of 8 MiB and ``sync`` (the flusher,
``wb_workfn``, writes vda back); ``dd iflag=direct`` reads loop0 (a loop device on a
buffered file on vda) from the v1 blkio cgroup of inode 8841 (loop0's worker for that
cgroup, ``loop_workfn``, reads the file) and then from the blkio root (``loop_rootcg_workfn``,
cgroup id 1); a short ``dd oflag=direct`` (pid 6308) writes a file on vda and exits. Another
helper's ext4 on loop1 commits its journal (``jbd2/loop1-8``, pid 6184) and its loop1 worker
reads its file on vda."""
VDA, LOOP0, LOOP1 = 254 << 20, 7 << 20, (7 << 20) | 1
WB_WORKFN, LOOP_ROOTCG_WORKFN, LOOP_WORKFN = (
    0xFFFFFFFF817092E0,
    0xFFFFFFFF81D71080,
    0xFFFFFFFF81D710B0,
)
THROTL_FN = 0xFFFFFFFF81B1CB30
KALLSYMS = (
    "ffffffff81000000 T _stext\n"
    "ffffffff817092e0 T wb_workfn\n"
    "ffffffff81b1cb30 t blk_throtl_dispatch_work_fn\n"
    "ffffffff81d71080 t loop_rootcg_workfn\n"
    "ffffffff81d710b0 t loop_workfn\n"
)


def batches(text: str) -> list[TracerBatch]:
    parser = TracerParser()
    return [b for line in text.splitlines(keepends=True) if (b := parser.feed(line)) is not None]


def host(tmp_path: Path, *, kallsyms: bool = True) -> tuple[Roots, str]:
    """A /proc (kallsyms, the jbd2 thread) and a /sys (vda, loop0, loop1, a v1 blkio tree
    with the reader's cgroup ``/capture``); the capture with that cgroup's id put in."""
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    if kallsyms:
        (proc / "kallsyms").write_text(KALLSYMS)
    jbd2 = proc / "6184"
    jbd2.mkdir()
    (jbd2 / "stat").write_text("6184 (jbd2/loop1-8) S 2 0 0 0 -1 2129984 0 0 0 0 0 0\n")
    (jbd2 / "cmdline").write_bytes(b"")
    blkio = sys / "fs" / "cgroup" / "blkio"
    (blkio / "capture").mkdir(parents=True)
    (blkio / "blkio.throttle.io_service_bytes").write_text("")
    for name, dev in (("vda", "254:0"), ("loop0", "7:0"), ("loop1", "7:1")):
        (sys / "class" / "block" / name).mkdir(parents=True)
        (sys / "class" / "block" / name / "dev").write_text(f"{dev}\n")
    text = CAPTURED.read_text()
    # The capture's cgroup ids are inodes of the live tree: this tree's in their place.
    text = text.replace(",8841,", f",{os.stat(blkio / 'capture').st_ino},")
    root_job = "4545802,-2116611968,1,"
    assert root_job in text
    text = text.replace(root_job, f"4545802,-2116611968,{os.stat(blkio).st_ino},")
    return Roots(proc=proc, sys=sys), text


def frame_of(roots: Roots, text: str) -> tuple[LatencyFrame, IssuerReader]:
    tracer = CannedTracer()
    part = LatencyPart(make_tracer=lambda: tracer, check=lambda: (None, None), attribution=True)
    counters = {
        n: DiskCounters(major, minor, n, (0,) * 11, 11)
        for n, major, minor in (("vda", 254, 0), ("loop0", 7, 0), ("loop1", 7, 1))
    }
    part.frame(counters, 0.0)
    for batch in batches(text):
        tracer.push(batch)
    return part.frame(counters, 1e12), IssuerReader(roots)


def every_issuer(reader: IssuerReader, latency: LatencyFrame, device: str) -> list[Issuer]:
    """All of ``device``'s issuers (not only the top ten)."""
    found, _ = reader._device_issuers(device, latency.issuers[device], latency.span_s or 1, 0.0)
    return list(found)


def test_the_program_follows_a_worker_to_its_job_keyed_by_numbers() -> None:
    who = tracer_program(queue=False, attribution=True, jobs=True, exits=True)
    submit = who.split("tracepoint:block:block_rq_issue")[0]
    # Only a workqueue worker pays for the chain; every other request one flags test.
    assert "if (curtask->flags & 32) {" in submit
    assert "$k = (struct kthread *)curtask->worker_private;" in submit
    assert "$w = (struct worker *)$k->data;" in submit
    assert "$f = (uint64)$w->current_func;" in submit
    assert f"$p = {JOB_FLAG} | " in submit and "$w->current_work" in submit
    assert "$g = $k->blkcg_css->cgroup->kn->id;" in submit
    # Maps keyed by numbers only: the function, the cgroup id, the queue's address; the
    # queue's name goes out as text once per queue, never as a key.
    assert "@kw__0[$p, $f, $g, $q] = count();" in submit
    assert "desc" not in who and "@kq[$q] == 0" in submit
    assert 'printf("queue %llu %s\\n", $q, $w->current_pwq->wq->name);' in submit
    assert "clear(@kd);" in who and "print(@kw__0); clear(@kw__0);" in who
    # Every process that exits leaves its comm, so a short-lived issuer keeps its name.
    assert (
        "tracepoint:sched:sched_process_exit /pid == tid/ { if (@tg) {"
        " @ic__1[pid, cgroup, comm] = count(); } else { @ic__0[pid, cgroup, comm] = count(); } }"
        in who
    )
    assert "kprobe" not in who and "kfunc" not in who and "rawtracepoint" not in who
    plain = tracer_program(queue=False, attribution=True)
    assert "curtask" not in plain and "sched_process_exit" not in plain


def test_the_parser_names_each_job_and_keeps_exited_comms() -> None:
    found = batches(CAPTURED.read_text())
    jobs = {
        (dev, io.job)
        for b in found
        for (dev, issuer), io in b.attributed.items()
        if issuer & JOB_FLAG and io.job is not None
    }
    assert (VDA, KernelJob(WB_WORKFN, 0, "writeback")) in jobs
    assert (VDA, KernelJob(LOOP_WORKFN, 8841, "loop0")) in jobs
    assert (VDA, KernelJob(LOOP_ROOTCG_WORKFN, 1, "loop0")) in jobs
    # No kworker is charged by its pid: every worker's request is its job's.
    assert not any(io.comm.startswith("kworker/") for b in found for io in b.attributed.values())
    short = [io for b in found for (dev, pid), io in b.attributed.items() if pid == 6308]
    assert short and all(io.comm == "dd" for io in short)


def test_kernel_io_is_one_entry_per_kind_and_whom_it_is_for(tmp_path: Path) -> None:
    roots, text = host(tmp_path)
    latency, reader = frame_of(roots, text)
    vda = every_issuer(reader, latency, "vda")
    kernel = {(i.kind, i.for_device, i.for_cgroup): i for i in vda if i.is_kernel}
    assert ("writeback", "vda", None) in kernel and kernel[("writeback", "vda", None)].writeback
    # loop0's backing I/O on vda: its worker for the reader's cgroup, and for the root.
    assert kernel[("loop", "loop0", "/capture")].rkB_s > 0
    assert kernel[("loop", "loop0", "/")].rkB_s > 0
    assert ("loop", "loop1", "/") in kernel  # the other helper's loop device
    assert all(i.comm == KERNEL and i.pid is None for i in kernel.values())
    assert sum(1 for i in kernel.values() if i.writeback) == 1
    # The short-lived writer exited before /proc was read: the name it exited with.
    assert [i.comm for i in vda if i.pid == 6308] == ["dd"]
    journal = [i for i in every_issuer(reader, latency, "loop1") if i.is_kernel]
    assert [(i.kind, i.for_device) for i in journal] == [("journal", "loop1")]


def test_without_kallsyms_no_job_is_guessed_to_be_writeback(tmp_path: Path) -> None:
    roots, text = host(tmp_path, kallsyms=False)
    latency, reader = frame_of(roots, text)
    kernel = [i for i in every_issuer(reader, latency, "vda") if i.is_kernel]
    assert kernel and {i.kind for i in kernel} == {"other"}
    assert not any(i.writeback for i in kernel)


def test_a_throttles_dispatch_is_for_the_cgroup_limited_there(tmp_path: Path) -> None:
    roots, _ = host(tmp_path)
    kinds = KernelKinds(roots)
    job = KernelJob(THROTL_FN, 0, "kthrotld")
    one = kinds.of_job(job, "loop0", ("/slow",), now=0.0)
    assert (one.kind, one.device, one.cgroup) == ("throttle", "loop0", "/slow")
    assert kinds.of_job(job, "loop0", ("/a", "/b"), now=0.0).cgroup is None  # which: unknown
    assert kinds.of_job(job, "loop0", (), now=0.0).cgroup is None
    limits = SimpleNamespace(max={"7:0": {"riops": 50, "wiops": None}, "7:1": {"rbps": None}})
    frame = SimpleNamespace(
        sample=SimpleNamespace(cgroups={"/slow": SimpleNamespace(limits=limits)})
    )
    assert limited_cgroups(frame, "7:0") == ("/slow",)
    assert limited_cgroups(frame, "7:1") == ()  # a rule of "max" only limits nothing
    assert limited_cgroups(None, "7:0") == ()
    unknown = kinds.of_job(KernelJob(0x1234, 0, "events"), "vda", (), now=0.0)
    assert (unknown.kind, unknown.device) == ("other", "vda")
    assert kinds.of_thread("jbd2/vda1-8", "vda").device == "vda1"
    assert kinds.of_thread("kswapd0", "vda").kind == "other"


def test_a_job_issuer_never_reads_proc(tmp_path: Path) -> None:
    roots, _ = host(tmp_path)
    io = PidIO("", 0, MappingProxyType({}), MappingProxyType({"read": 8}))
    ghost = JOB_FLAG | 6184  # the jbd2 thread's pid in its low bits: still a job, not that pid
    found, _ = IssuerReader(roots)._device_issuers("vda", {ghost: io}, 1.0, 0.0)
    assert [(i.kind, i.pid) for i in found] == [("other", None)]


def test_json_and_recordings_carry_the_kind_and_old_recordings_still_read(
    tmp_path: Path,
) -> None:
    roots, text = host(tmp_path)
    latency, reader = frame_of(roots, text)
    issuers = reader.frame(latency, None)
    assert issuers is not None
    loop = next(i for i in issuers.of("vda") if i.kind == "loop")
    doc = loop.to_json()
    assert doc["pid"] is None and doc["comm"] == "kernel" and doc["writeback"] is False
    assert doc["kind"] == "loop" and doc["for"] == {"device": "loop1", "cgroup": "/"}
    assert "kind" not in next(i for i in issuers.of("vda") if not i.is_kernel).to_json()
    back = IssuersFrame.from_record(issuers.to_record())
    assert back is not None
    assert [i.to_json() for i in back.of("vda")] == [i.to_json() for i in issuers.of("vda")]
    # Written before kinds: the kernel entry had only the writeback flag.
    old = {"source": "tracer", "devices": {"vda": [
        {"pid": None, "comm": "kernel", "w/s": 3.0, "wkB/s": 12.0, "writeback": True},
        {"pid": None, "comm": "kernel", "r/s": 1.0, "rkB/s": 4.0, "writeback": False},
        {"pid": 7, "comm": "dd", "w/s": 1.0, "wkB/s": 4.0, "kind": "loop"},
    ]}}  # fmt: skip
    read = IssuersFrame.from_record(old)
    assert read is not None
    assert [(i.kind, i.writeback) for i in read.of("vda")] == [
        ("writeback", True),
        ("other", False),
        (None, False),
    ]
    hostile = {"devices": {"vda": [{"pid": None, "kind": "bogus", "for": "x"}]}}
    [entry] = IssuersFrame.from_record(hostile).of("vda")  # type: ignore[union-attr]
    assert (entry.kind, entry.for_device, entry.for_cgroup) == ("other", None, None)


def test_the_who_line_says_the_kind_and_whom_it_is_for() -> None:
    loop = Issuer(None, KERNEL, None, None, None, 5.0, 0.0, 20.0, 0.0, kind="loop",
                  for_device="loop3", for_cgroup="/jobs/a")  # fmt: skip
    assert issuer_text(loop).startswith("kernel loop (loop3 /jobs/a) 5 IO/s")
    flusher = Issuer(None, KERNEL, None, None, None, 0.0, 5.0, 0.0, 20.0, kind="writeback",
                     for_device="vda")  # fmt: skip
    assert issuer_text(flusher).startswith("kernel writeback 5 IO/s")


def test_a_cgroup_made_after_the_last_walk_is_found_at_once(tmp_path: Path) -> None:
    roots, _ = host(tmp_path)
    kinds = KernelKinds(roots)
    blkio = roots.sys / "fs" / "cgroup" / "blkio"
    loop = KernelJob(LOOP_WORKFN, os.stat(blkio / "capture").st_ino, "loop0")
    assert kinds.of_job(loop, "vda", now=0.0).cgroup == "/capture"
    (blkio / "later").mkdir()
    later = KernelJob(LOOP_WORKFN, os.stat(blkio / "later").st_ino, "loop0")
    assert kinds.of_job(later, "vda", now=0.5).cgroup == "/later"  # no wait for a rescan
    gone = KernelJob(LOOP_WORKFN, 10**12, "loop0")
    assert kinds.of_job(gone, "vda", now=0.6).cgroup is None
    assert kinds.of_job(loop, "vda", now=0.7).cgroup == "/capture"


def test_kallsyms_is_read_again_only_while_a_kind_is_unnamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots, _ = host(tmp_path)
    reads: list[float] = []
    real = kernel_kinds.read_functions

    def counted(r: Roots, names: frozenset[str]) -> dict[int, str]:
        reads.append(0)
        return real(r, names)

    monkeypatch.setattr(kernel_kinds, "read_functions", counted)
    kinds = KernelKinds(roots)
    assert kinds.of_job(KernelJob(WB_WORKFN, 0, "writeback"), "vda", now=0.0).kind == "writeback"
    for n, now in enumerate((100.0, 200.0, 300.0)):  # other work functions, long after
        assert kinds.of_job(KernelJob(0x1000 + n, 0, "events"), "vda", now=now).kind == "other"
    assert len(reads) == 1  # every kind was named at the first read: never again
    (roots.proc / "kallsyms").write_text("ffffffff817092e0 T wb_workfn\n")  # loop: a module
    kinds = KernelKinds(roots)
    kinds.of_job(KernelJob(WB_WORKFN, 0, "writeback"), "vda", now=0.0)
    kinds.of_job(KernelJob(0x1000, 0, "events"), "vda", now=1.0)  # within RESCAN_S
    kinds.of_job(KernelJob(0x1000, 0, "events"), "vda", now=100.0)  # seen: no read for it
    assert len(reads) == 2
    kinds.of_job(KernelJob(LOOP_WORKFN, 0, "loop0"), "vda", now=100.0)  # new, names missing
    assert len(reads) == 3
