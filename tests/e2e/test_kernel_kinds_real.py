"""The kernel's own I/O named for what it is, for real: a loop device's backing I/O on the disk
below is that loop device's (kind ``loop``, for its reader's cgroup); a throttled reader's
delayed bios are its cgroup's (kind ``throttle``); a process that exits mid-frame keeps its
name."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.latency import part as latency
from iotop_plus.sampling.latency.program import jobs_present, sample_kept
from iotop_plus.sampling.processes.issuers import Issuer
from iotop_plus.sampling.processes.issuers_part import ISSUERS, IssuersPart
from tests.e2e.test_who_issuers_real import (
    BLKIO_V1,
    _coverage,
    blkio_cgroup,
    fio_in_cgroup,
    frames_until,
    need_tracer,
)
from tests.e2e.test_why_real import RIOPS
from tests.support.wait import holds_within

pytestmark = [pytest.mark.root, pytest.mark.slow]


def need_jobs() -> None:
    need_tracer()
    if not jobs_present():
        pytest.skip("no BTF chain to a worker's job here (kernel BTF, 5.17+, blk cgroups)")


def whole_disk_of(path: Path) -> str:
    """The whole disk a file lives on (``vda``)."""
    dev = os.stat(path).st_dev
    sysdir = Path(os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"))
    if (sysdir / "partition").exists():
        sysdir = sysdir.parent
    if not (sysdir / "stat").exists():
        pytest.skip(f"{path} is not on a block device here")
    return sysdir.name


def kernel_of(frames: list[Frame], device: str) -> list[tuple[Issuer, float]]:
    """Every kernel entry of ``device`` in the frames, with the frame's traced span."""
    return [
        (i, f.latency.span_s or 0.0)
        for f in frames
        if (w := f.get(IssuersPart)) is not None and f.latency is not None
        for i in w.of(device)
        if i.is_kernel
    ]


def test_a_loop_devices_backing_io_is_named_as_that_loop_devices_for_its_readers_cgroup(
    make_loop, fio_bin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_jobs()
    monkeypatch.setattr(latency, "BUSY_IOPS", 10**12)  # every request: no restart to sample
    dev = make_loop(64, filled=True)
    backing = tmp_path / "backing0.img"
    disk = whole_disk_of(backing)
    # Only this file's pages leave the cache: the loop worker's reads reach the disk.
    fd = os.open(backing, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    source = live_source(Roots(), want=(ISSUERS,))
    try:
        assert source.wait_latency(30), "the tracer did not start"
        source.next_frame()
        with blkio_cgroup("loop-reader") as cgroup:
            job = fio_in_cgroup(dev, cgroup, 3)
            frames = frames_until(source, lambda: job.poll() is not None, 60)
            out = job.communicate()[0]
        assert job.returncode == 0, out
    finally:
        source.close()
    below = kernel_of(frames, disk)
    loops = [(i, s) for i, s in below if i.kind == "loop" and i.for_device == dev]
    seen = sorted({(i.kind, i.for_device, i.for_cgroup) for i, _ in below}, key=str)
    assert loops, f"no loop entry for {dev} on {disk}: {seen}; {_coverage(frames)}"
    assert {i.for_cgroup for i, _ in loops} == {cgroup}, seen
    assert all(i.comm == "kernel" and i.pid is None and not i.writeback for i, _ in loops)
    read_kb = sum(i.rkB_s * span for i, span in loops)
    assert read_kb > 0
    # None of it is taken for the flusher's.
    assert not any(i.writeback and i.for_device == dev for i, _ in below)


def test_a_throttled_readers_delayed_bios_are_named_as_its_cgroups(
    make_loop, fio_bin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_jobs()
    if not (BLKIO_V1 / "blkio.throttle.read_iops_device").exists():
        pytest.skip("no v1 blkio throttle here")
    monkeypatch.setattr(latency, "BUSY_IOPS", 10**12)
    dev = make_loop(64)
    devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
    with blkio_cgroup("throttled") as cgroup:
        where = BLKIO_V1 / cgroup.lstrip("/")
        (where / "blkio.throttle.read_iops_device").write_text(f"{devno} {RIOPS}\n")
        source = live_source(Roots(), throttles=True, want=(ISSUERS,))
        try:
            assert source.wait_latency(30), "the tracer did not start"
            source.next_frame()
            job = fio_in_cgroup(dev, cgroup, 4, realtime=True)
            frames = frames_until(source, lambda: job.poll() is not None, 60)
            out = job.communicate()[0]
        finally:
            source.close()
    assert job.returncode == 0, out
    mine = kernel_of(frames, dev)
    seen = sorted({(i.kind, i.for_device, i.for_cgroup) for i, _ in mine}, key=str)
    throttled = [(i, s) for i, s in mine if i.kind == "throttle"]
    assert throttled, f"no throttle entry on {dev}: {seen}; {_coverage(frames)}"
    assert {(i.for_device, i.for_cgroup) for i, _ in throttled} == {(dev, cgroup)}, seen
    # The reader's requests that went over the limit waited for the dispatch and are the
    # throttle entry's; the rest fio submitted itself: together, every read fio made.
    delayed = sum((i.r_s or 0.0) * span for i, span in throttled)
    direct = sum(
        (i.r_s or 0.0) * (f.latency.span_s or 0.0)
        for f in frames
        if (w := f.get(IssuersPart)) is not None and f.latency is not None
        for i in w.of(dev)
        if i.pid == job.pid
    )
    reads = json.loads(out)["jobs"][0]["read"]["total_ios"]
    print(f"{dev}: fio read {reads}, {direct:.0f} submitted by fio, {delayed:.0f} dispatched")
    assert delayed > 0 and direct + delayed == pytest.approx(reads, rel=0.05), _coverage(frames)


def test_a_process_that_exits_mid_frame_keeps_its_name(make_loop, tmp_path: Path) -> None:
    """One direct read by a ``dd`` that is gone (exited and reaped) before any frame reads
    ``/proc``, at a sector whose request the submit probe does not look up the comm for
    (one in 8 is): only the comm kept at its exit names it."""
    need_tracer()
    dev = make_loop(16, filled=True)
    block = next(b for b in range(1, 4096) if not sample_kept(b * 8, 8, 8))
    source = live_source(Roots(), want=(ISSUERS,))
    try:
        assert source.wait_latency(30), "the tracer did not start"
        source.next_frame()
        dd = subprocess.Popen(
            ["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k", "count=1", f"skip={block}",
             "iflag=direct", "status=none"],
        )  # fmt: skip
        assert dd.wait(30) == 0  # reaped: /proc/PID is gone, not a zombie
        assert not Path(f"/proc/{dd.pid}").exists()
        named: list[Issuer] = []
        frames: list[Frame] = []

        def seen() -> bool:
            frames.append(source.next_frame())
            who = frames[-1].get(IssuersPart)
            named.extend(i for i in (who.of(dev) if who else ()) if i.pid == dd.pid)
            return bool(named)

        assert holds_within(seen, 30), f"dd[{dd.pid}] is not among {dev}'s issuers"
    finally:
        source.close()
    assert {i.comm for i in named} == {"dd"}, _coverage(frames)
