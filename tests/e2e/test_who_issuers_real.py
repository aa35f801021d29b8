"""Who does each device's I/O, for real (#24 items 1-2): fio jobs in their own v1 blkio
cgroups on loop devices, a buffered writer's data written back by the flusher, and
``snapshot --issuers`` with and without root."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.latency import part as latency
from iotop_plus.sampling.processes.issuers import KERNEL, TRACER
from iotop_plus.sampling.processes.issuers_part import ISSUERS, IssuersPart
from tests.support.bpf_misses import tracer_misses
from tests.support.cgroup_trees import remove_live_cgroup
from tests.support.mounts import unmount
from tests.support.nobody import nobody_env, nobody_python
from tests.support.wait import holds_within

pytestmark = pytest.mark.slow

BLKIO_V1 = Path("/sys/fs/cgroup/blkio")
"""Where this hybrid host mounts the v1 blkio hierarchy (every task sits in the v2 root)."""


def need_tracer() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace)")
    if shutil.which("bpftrace") is None:
        pytest.skip("bpftrace is not installed (make sysdeps installs it)")


@contextlib.contextmanager
def blkio_cgroup(name: str) -> Iterator[str]:
    """A new v1 blkio cgroup of this test (removed after); yields its path in the hierarchy."""
    if not (BLKIO_V1 / "cgroup.procs").exists():
        pytest.skip("no v1 blkio hierarchy mounted at /sys/fs/cgroup/blkio")
    path = BLKIO_V1 / f"iotop-plus-test-{os.getpid()}-{name}"
    path.mkdir()
    try:
        yield f"/{path.name}"
    finally:
        remove_live_cgroup(path)


def fio_in_cgroup(
    dev: str, cgroup: str, seconds: float, *, realtime: bool = False
) -> subprocess.Popen[str]:
    """fio randread at QD1 on ``dev``, its job a thread of the one fio process (so that
    process is the issuer), started inside ``cgroup`` (written before exec).

    realtime: fio at SCHED_FIFO 1, for a test that needs it to keep up with a limit: on a
    busy host (CPU pressure 64 % once) a fio waiting for a CPU used under 90 % of a 50-IOPS
    limit, so the verdict rightly said "CPU" and not "throttled". It sleeps in every read, so
    it cannot starve the machine."""
    procs = BLKIO_V1 / cgroup.lstrip("/") / "cgroup.procs"

    def enter() -> None:
        procs.write_text(str(os.getpid()))
        if realtime:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))

    argv = [
        "fio",
        f"--name=who-{dev}",
        f"--filename=/dev/{dev}",
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--ioengine=psync",
        "--readonly",
        "--thread",
        "--rate_iops=2500",  # the machine is shared: enough requests, not all of a core
        "--time_based",
        f"--runtime={seconds}",
        "--output-format=json",
    ]
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=enter
    )


def frames_until(source: LiveSource, done: Callable[[], bool], limit_s: float) -> list[Frame]:
    """A frame at each look at ``done()`` until it holds (the last one after: the end of the
    last requests). Rates times spans add up to the requests whatever the frames' pace."""
    frames: list[Frame] = []

    def taken() -> bool:
        finished = done()
        frames.append(source.next_frame())
        return finished

    holds_within(taken, limit_s)
    # A partial frame (the tracer's output for its end came late) leaves the rest of its
    # requests to the next frame: take frames until one is whole, so none is left out.
    for _ in range(20):
        lat = frames[-1].latency
        if lat is None or not lat.partial:
            break
        frames.append(source.next_frame())
    return frames


def traced_requests(frames: list[Frame], dev: str, pid: int | None) -> tuple[float, float]:
    """(reads, writes) the frames charged to ``pid`` on ``dev`` (None: the kernel entry)."""
    reads = writes = 0.0
    for frame in frames:
        lat, who = frame.latency, frame.get(IssuersPart)
        if lat is None or who is None or who.source != TRACER or not lat.span_s:
            continue
        for issuer in who.of(dev):
            if issuer.pid == pid:
                reads += (issuer.r_s or 0.0) * lat.span_s
                writes += (issuer.w_s or 0.0) * lat.span_s
    return reads, writes


def _coverage(frames: list[Frame]) -> str:
    """What the frames' tracer covered, for a failure's message."""
    spans = [f.latency.span_s or 0.0 for f in frames if f.latency]
    untraced = sum(1 for f in frames if (w := f.get(IssuersPart)) is None or w.source != TRACER)
    partial = sum(1 for f in frames if f.latency and f.latency.partial)
    return (
        f"{len(frames)} frames, traced span {sum(spans):.2f} s, "
        f"{untraced} without the tracer's issuers, {partial} partial"
    )


def _written_by(frames: list[Frame], dev: str) -> dict[str, float]:
    """kB written to ``dev`` in the frames by each issuer (``comm[pid]``), for a message."""
    out: dict[str, float] = {}
    for f in frames:
        if (w := f.get(IssuersPart)) and f.latency:
            for i in w.of(dev):
                key = f"{i.comm}[{i.pid}]"
                out[key] = out.get(key, 0.0) + i.wkB_s * (f.latency.span_s or 0.0)
    return out


@pytest.mark.root
def test_two_fio_jobs_in_two_cgroups_are_named_on_their_devices(
    make_loop, fio_bin, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_tracer()
    # Every request counted: the tracer sees the whole host, and another test's busy fio
    # beside this one (make test's workers) would switch it to timing a sample, restarting it.
    monkeypatch.setattr(latency, "BUSY_IOPS", 10**12)
    devs = [make_loop(64), make_loop(64)]
    source = LiveSource()
    source.want(ISSUERS, True)
    try:
        assert source.wait_latency(20), "the tracer did not start"
        source.next_frame()
        with blkio_cgroup("a") as cg_a, blkio_cgroup("b") as cg_b:
            jobs = [fio_in_cgroup(devs[0], cg_a, 3), fio_in_cgroup(devs[1], cg_b, 3)]
            frames = frames_until(source, lambda: all(j.poll() is not None for j in jobs), 60)
            outputs = [j.communicate()[0] for j in jobs]
        for dev, job, out, cgroup in zip(devs, jobs, outputs, (cg_a, cg_b), strict=True):
            assert job.returncode == 0, out
            fio = json.loads(out)["jobs"][0]["read"]
            seen = [i for f in frames if (w := f.get(IssuersPart)) for i in w.of(dev)]
            mine = [i for i in seen if i.pid == job.pid]
            assert mine, f"fio (pid {job.pid}) is not among {dev}'s issuers"
            assert all(i.comm == "fio" for i in mine)
            assert all(i.cmdline == " ".join(job.args) for i in mine)  # type: ignore[arg-type]
            assert {(i.cgroup, i.cgroup_source) for i in mine} == {(cgroup, "blkio")}
            reads, _ = traced_requests(frames, dev, job.pid)
            # IOPS over fio's own runtime: the frames cover all of it.
            traced_iops = reads / (fio["runtime"] / 1000)
            print(f"{dev}: fio {fio['iops']:.0f} IOPS, traced {traced_iops:.0f}")
            assert traced_iops == pytest.approx(fio["iops"], rel=0.05), _coverage(frames)
            top = max(
                (i for f in frames if (w := f.get(IssuersPart)) for i in w.of(dev)),
                key=lambda i: i.iops,
            )
            assert top.pid == job.pid
            assert top.read.p50_ms is not None and top.read.max_ms is not None
        other = devs[1]
        charged = [i.pid for f in frames if (w := f.get(IssuersPart)) for i in w.of(other)]
        assert jobs[0].pid not in charged, "the first job's I/O was charged to the other device"
    finally:
        source.close()


@pytest.mark.root
def test_a_buffered_writers_data_is_written_back_by_the_kernel(make_loop, tmp_path: Path) -> None:
    """Buffered writes, then syncfs: the flusher writes them back, so the device's issuers
    show the ``kernel`` entry of kind ``writeback`` (for that device) carrying the bytes, not
    the writer."""
    need_tracer()
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 is not installed (e2fsprogs)")
    dev = make_loop(128)
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "ext4", f"/dev/{dev}", str(mnt)], check=True)
    source = LiveSource()
    source.want(ISSUERS, True)
    try:
        assert source.wait_latency(20), "the tracer did not start"
        source.next_frame()
        size = 24 * 1024 * 1024
        with open(mnt / "dirty", "wb") as f:
            for _ in range(size // (1024 * 1024)):
                f.write(os.urandom(1024 * 1024))
        flush = subprocess.Popen(["sync", "-f", str(mnt / "dirty")])
        frames = frames_until(source, lambda: flush.poll() is not None, 60)
        assert flush.wait() == 0
        kernel = [i for f in frames if (w := f.get(IssuersPart)) for i in w.of(dev) if i.is_kernel]
        assert kernel and kernel[0].comm == KERNEL
        flusher = [i for i in kernel if i.writeback]
        assert flusher, f"the flusher's work was not seen: {[i.kind for i in kernel]}"
        assert {(i.kind, i.for_device) for i in flusher} == {("writeback", dev)}
        _, written = traced_requests(frames, dev, None)
        kb = sum(
            i.wkB_s * (f.latency.span_s or 0.0)
            for f in frames
            if (w := f.get(IssuersPart)) and f.latency
            for i in w.of(dev)
            if i.is_kernel
        )
        # Usually 100 % (24,590 kB of 24,576 written here, the rest metadata); twice in about
        # 15 fresh-clone runs 83 % (20,494 kB), cause not found: the message says who wrote.
        assert written > 0 and kb >= 0.8 * size / 1024, (
            f"kernel wrote {kb:.0f} kB; {_written_by(frames, dev)}; {_coverage(frames)}"
        )
        _, mine = traced_requests(frames, dev, os.getpid())
        assert mine * 4 < written  # the writer itself issued (almost) none of it
    finally:
        source.close()
        unmount(str(mnt))


@pytest.mark.root
def test_snapshot_issuers_names_fio_on_its_loop_device(make_loop, fio_bin, tmp_path: Path) -> None:
    need_tracer()
    dev = make_loop(64)
    with blkio_cgroup("snap") as cgroup:
        job = fio_in_cgroup(dev, cgroup, 600)  # killed below, however long the start takes
        try:
            done = subprocess.run(
                [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"),
                 "snapshot", "--issuers", "-f", "json", "-i", "1", "-c", "1", dev],
                capture_output=True, text=True, timeout=60, check=False,
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            )  # fmt: skip
        finally:
            job.kill()
            job.communicate()
    assert done.returncode == 0, done.stderr
    disk = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"][0]["disk"][0]
    assert disk["disk_device"] == dev
    issuers = disk["issuers"]
    assert 1 <= len(issuers) <= 10
    fio = issuers[0]
    assert (fio["pid"], fio["comm"], fio["cgroup"], fio["cgroup_source"]) == (
        job.pid,
        "fio",
        cgroup,
        "blkio",
    )
    assert fio["r/s"] > 0 and fio["rkB/s"] == pytest.approx(fio["r/s"] * 4, rel=0.01)
    assert fio["latency"]["read"]["p50_ms"] is not None


def test_not_root_snapshot_issuers_is_null_and_one_line(tmp_path: Path) -> None:
    """As nobody, with a PATH that lacks bpftrace: issuers are null, one stderr line, exit 0."""
    argv = nobody_python()
    empty = tmp_path / "bin"
    empty.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    done = subprocess.run(
        [*argv, "-m", "iotop_plus", "snapshot", "--issuers", "-f", "json", "--all",
         "--interval", "0.3", "--count", "1"],
        capture_output=True, text=True, timeout=60, cwd="/", check=False,
        env=nobody_env(str(empty)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--issuers" in lines[0] and "root" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    disks = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"][0]["disk"]
    assert disks and all(d["issuers"] is None for d in disks)


@pytest.mark.root
def test_record_issuers_then_snapshot_from_the_recording_names_fio(
    make_loop, fio_bin, tmp_path: Path
) -> None:
    """record --issuers stores the top issuers (type W); snapshot --from --issuers prints
    them from the recording: fio's pid, command line and cgroup on its loop device."""
    need_tracer()
    dev = make_loop(64)
    rec = tmp_path / "rec"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    base = [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state")]
    with blkio_cgroup("rec") as cgroup:
        job = fio_in_cgroup(dev, cgroup, 600)  # killed below, however long the start takes
        try:
            done = subprocess.run(
                [*base, "record", "--issuers", "--dir", str(rec), "-i", "0.5", "--count", "8"],
                capture_output=True, text=True, timeout=90, check=False, env=env,
            )  # fmt: skip
        finally:
            job.kill()
            job.communicate()
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [*base, "snapshot", "--from", str(rec), "--issuers", "-f", "json", dev],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    stats = json.loads(shown.stdout)["sysstat"]["hosts"][0]["statistics"]
    named = [
        i
        for s in stats
        for d in s["disk"]
        if d["disk_device"] == dev and d["issuers"]
        for i in d["issuers"]
        if i["pid"] == job.pid
    ]
    assert named, f"fio is in no recorded interval: {shown.stderr}"
    assert {(i["comm"], i["cgroup"], i["cgroup_source"]) for i in named} == {
        ("fio", cgroup, "blkio")
    }
    assert all(i["cmdline"] == " ".join(job.args) for i in named)  # type: ignore[arg-type]
    assert max(i["r/s"] for i in named) > 0


@pytest.mark.root
def test_an_issuers_device_latency_agrees_with_fios_own(make_loop, fio_bin) -> None:
    """The attributing tracer times requests from the stamp it packs with the issuer's pid:
    fio's reads (QD1 on a filled, direct-I/O loop device: they wait on the disk below) take
    at most fio's clat and at least half of it, at p50 and p99, and they are all counted."""
    need_tracer()
    dev = make_loop(32, direct_io=True, filled=True)
    source = LiveSource()
    source.want(ISSUERS, True)
    try:
        assert source.wait_latency(20), "the tracer did not start"
        source.next_frame()
        missed = tracer_misses()
        # SCHED_FIFO 1 (as test_latency_real does): on a busy machine fio's clat is
        # otherwise mostly time spent waiting for a CPU. It sleeps in every read (QD1).
        chrt = ["chrt", "-f", "1"] if shutil.which("chrt") else []
        job = subprocess.Popen(
            [*chrt, "fio", "--name=lat", f"--filename=/dev/{dev}", "--rw=randread", "--bs=4k",
             "--direct=1", "--ioengine=psync", "--readonly", "--thread", "--time_based",
             "--runtime=3", "--output-format=json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        out, err = job.communicate(timeout=60)
        # A partial frame (the tracer's output for its end came late) leaves the rest of
        # fio's requests to the next one: frames until one is whole.
        frames = frames_until(source, lambda: True, 10)
        skipped = tracer_misses() - missed
    finally:
        source.close()
    assert job.returncode == 0, err
    fio = json.loads(out[out.index("{") :])["jobs"][0]["read"]
    clat = fio["clat_ns"]["percentile"]
    frame = frames[0]  # all but the last requests of a late end
    who = frame.get(IssuersPart)
    assert who is not None and frame.latency is not None
    [mine] = [i for i in who.of(dev) if i.pid == job.pid]
    p50, p99 = mine.read.p50_ms, mine.read.p99_ms
    print(f"fio clat p50 {clat['50.000000']} ns p99 {clat['99.000000']} ns; ours {p50} {p99} ms")
    assert p50 is not None and p99 is not None
    for ours_ms, theirs_ns in ((p50, clat["50.000000"]), (p99, clat["99.000000"])):
        assert theirs_ns / 2 <= ours_ms * 1e6 <= theirs_ns * 1.07  # bucket width: 1/8
    traced, _ = traced_requests(frames, dev, job.pid)
    # Every request, but those whose probe the kernel skipped: it skips a tracepoint's program
    # that fires (in an interrupt) while another BPF program runs on the same CPU, and counts
    # each skip in the program's recursion_misses.
    total = fio["total_ios"]
    low, high = total - skipped - 0.01 * total - 5, total + 0.01 * total + 5
    assert low <= traced <= high, (skipped, _coverage(frames))
