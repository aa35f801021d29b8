"""The sync and journal parts against fio and the kernel's own counts, on a loop device of the
test's own with ext4 (and XFS): their probes run through real bpftrace with a tick printer of
the test's (tests/support/part_tracer.py), their readers with a ReadContext built here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.sampler import Sample, Sampler
from iotop_plus.sampling.frame.part import ReadContext, TraceProgram
from iotop_plus.sampling.latency.hist import bucket_bounds, bucket_of
from iotop_plus.sampling.sync.jbd2_part import Jbd2Frame, Jbd2Part, read_transactions
from iotop_plus.sampling.sync.part import SyncFrame, SyncPart, sync_summary
from iotop_plus.sampling.sync.program import BY_FD, SyncTraced
from tests.support.bpf_misses import recursion_misses
from tests.support.mounts import unmount
from tests.support.part_tracer import part_tracer, require_bpftrace

pytestmark = [pytest.mark.slow, pytest.mark.root]

ROOTS = Roots()


@dataclass
class Mounted:
    mnt: Path
    dev: str


def make_fs(make_loop: Callable[..., str], tmp_path: Path, kind: str) -> Iterator[Mounted]:
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices and mount)")
    mkfs = shutil.which(f"mkfs.{kind}")
    if mkfs is None:
        pytest.skip(f"mkfs.{kind} is not installed (make sysdeps installs it)")
    size, argv = {
        "ext4": (128, [mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]),
        "xfs": (320, [mkfs, "-q", "-f"]),
    }[kind]
    name = make_loop(size)
    subprocess.run([*argv, f"/dev/{name}"], check=True, timeout=120, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-o", "noatime", f"/dev/{name}", str(mnt)], check=True, timeout=30)
    try:
        yield Mounted(mnt, name)
    finally:
        unmount(mnt)


@pytest.fixture
def ext4(make_loop: Callable[..., str], tmp_path: Path) -> Iterator[Mounted]:
    yield from make_fs(make_loop, tmp_path, "ext4")


@pytest.fixture
def xfs(make_loop: Callable[..., str], tmp_path: Path) -> Iterator[Mounted]:
    yield from make_fs(make_loop, tmp_path, "xfs")


def programs() -> list[TraceProgram]:
    require_bpftrace()
    sync = SyncPart().trace(ROOTS)
    journal = Jbd2Part().trace(ROOTS)
    assert sync is not None and journal is not None
    return [sync, journal]


def fio(fio_bin: str, path: Path, *extra: str, size: str = "8m") -> subprocess.Popen[str]:
    """fio writing 8k blocks to ``path`` (a file of ``size`` rewritten for 3 s), started."""
    return subprocess.Popen(
        [
            fio_bin,
            "--name=wal",
            f"--filename={path}",
            "--rw=write",
            "--bs=8k",
            f"--size={size}",
            "--time_based",
            "--runtime=3",
            "--output-format=json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


def context(traced: object, previous: Sample | None = None) -> tuple[ReadContext, Sample]:
    sampler = Sampler(ROOTS)
    sample = sampler.sample()
    ctx = ReadContext(
        roots=ROOTS,
        sample=sample,
        previous=previous,
        inventory=sampler.inventory(refresh=True),
        wanted=frozenset({"sync", "jbd2"}),
        traced=traced,
    )
    return ctx, sample


def close_to(ours_us: float | None, fios_ns: float) -> bool:
    """Within 10 % of fio's figure, or within the width of the bucket fio's figure is in."""
    assert ours_us is not None
    low, high = bucket_bounds(bucket_of(int(fios_ns)))
    return abs(ours_us * 1000 - fios_ns) <= max(0.10 * fios_ns, high - low)


@dataclass
class Run:
    job: dict[str, Any]
    """fio's job."""
    sync: SyncTraced
    journal: object
    before: dict[str, int]
    """The kernel's transaction counts before and after."""
    after: dict[str, int]
    ticks: int
    """Ticks (and the closing mark) that printed and cleared the maps while fio ran."""
    missed: int = 0
    """Runs of the tracer's programs the kernel skipped meanwhile."""

    def counted(self, seen: int, fios: int) -> bool:
        """Whether ``seen`` syncs are fio's ``fios``, each once. The probes write one copy of
        the maps while the tick prints and clears the other, so no sync is lost between a
        print and its clear; only the kernel skips a probe, when it fires while another
        tracer's program runs on that CPU (counted in ``missed``)."""
        return fios - self.missed <= seen <= fios


def traced_run(start: Callable[[], subprocess.Popen[str]], sync_reader: Any) -> Run:
    """fio under the tracer, and what it saw. While fio runs, each tick's syncs go through
    ``sync_reader`` as a frame would (it names files through the pids that synced them)."""
    sync_program, journal_program = programs()
    with part_tracer(sync_program, journal_program) as tracer:
        subprocess.run(["sync"], check=True, timeout=120)
        tracer.mark()
        tracer.take()
        before = read_transactions(ROOTS.proc)
        ticks = tracer.ticks
        missed = recursion_misses(tracer.pid)
        proc = start()
        sync: object = None
        journal: object = None
        while proc.poll() is None:
            tracer.wait_tick()
            got, more = tracer.take()
            if got is not None:
                sync_reader.read(context(got)[0])
            sync = got if sync is None else sync_program.merge(sync, got)
            journal = more if journal is None else journal_program.merge(journal, more)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        after = read_transactions(ROOTS.proc)
        tracer.mark()
        ticks = tracer.ticks - ticks
        missed = recursion_misses(tracer.pid) - missed
        got, more = tracer.take()
        sync = sync_program.merge(sync, got)
        journal = journal_program.merge(journal, more)
    assert isinstance(sync, SyncTraced)
    job: dict[str, Any] = json.loads(out)["jobs"][0]
    return Run(job, sync, journal, before, after, ticks, missed)


def test_wal_job_sync_percentiles_agree_with_fios_and_commits_with_the_kernels(
    ext4: Mounted, fio_bin: str
) -> None:
    target = ext4.mnt / "wal.dat"
    reader = SyncPart().reader(ROOTS)
    run = traced_run(lambda: fio(fio_bin, target, "--fdatasync=1", "--ioengine=psync"), reader)
    lat = run.job["sync"]["lat_ns"]
    assert lat["N"] > 100

    ctx, sample = context(run.sync)
    frame, _ = reader.read(ctx)
    assert isinstance(frame, SyncFrame) and frame.traced
    dev = frame.devices[ext4.dev]
    assert set(dev.calls) == {"fdatasync"}
    doc = sync_summary(dev)
    assert run.counted(doc["count"], lat["N"]), (doc["count"], lat["N"], run.ticks)
    assert close_to(doc["p50_us"], lat["percentile"]["50.000000"]), (doc, lat["percentile"])
    assert close_to(doc["p99_us"], lat["percentile"]["99.000000"]), (doc, lat["percentile"])
    assert doc["max_us"] * 1000 <= lat["max"] * 1.1
    top = doc["by_file"][0]
    assert (top["path"], top["comm"], top["count"]) == (str(target), "fio", doc["count"])

    # the same interval's commits: the kernel's count for this journal grew by as many
    journal_frame, _ = Jbd2Part().reader(ROOTS).read(context(run.journal, sample)[0])
    assert isinstance(journal_frame, Jbd2Frame) and journal_frame.traced
    mine = journal_frame.devices[ext4.dev]
    kernel = run.after[ext4.dev] - run.before[ext4.dev]
    assert kernel > 0
    assert run.counted(mine.commits, kernel), (mine.commits, kernel, run.ticks)
    assert mine.phases is not None
    assert all(run.counted(mine.phases[p].count, kernel) for p in ("locked", "flushing", "logging"))
    assert mine.phases["logging"].total > 0


def test_io_uring_fsyncs_are_counted_once(ext4: Mounted, fio_bin: str) -> None:
    target = ext4.mnt / "ring.dat"
    reader = SyncPart().reader(ROOTS)
    run = traced_run(
        lambda: fio(fio_bin, target, "--fsync=1", "--ioengine=io_uring", size="4m"), reader
    )
    n = run.job["sync"]["lat_ns"]["N"]
    assert n > 200
    frame, _ = reader.read(context(run.sync)[0])
    assert isinstance(frame, SyncFrame)
    dev = frame.devices[ext4.dev]
    assert set(dev.calls) == {"fsync"}
    assert run.counted(dev.calls["fsync"].count, n), (dev.calls["fsync"].count, n, run.ticks)
    mine = [(f.path, f.hist.count) for f in dev.files]
    assert mine == [(str(target), dev.calls["fsync"].count)], mine
    # fio's io_uring syncs reach ext4's probes only, never the syscall path: the processes
    # that synced through ext4's probes made no sync by descriptor (other tests' processes,
    # fio among them, may sync files on filesystems without such probes meanwhile)
    st_dev = os.stat(target).st_dev
    ours = (os.major(st_dev) << 20) | os.minor(st_dev)  # the kernel's dev_t, as the maps key
    syncers = {pid for (dev_t, _, pid, call) in run.sync.stats if dev_t == ours}
    assert syncers and not any(
        call & BY_FD for (_, _, pid, call) in run.sync.stats if pid in syncers
    )


def test_untraced_commits_are_the_kernels_transaction_count(ext4: Mounted, fio_bin: str) -> None:
    reader = Jbd2Part().reader(ROOTS)
    first, sample = context(None)
    value, _ = reader.read(first)
    assert isinstance(value, Jbd2Frame) and not value.traced
    assert value.devices[ext4.dev].commits_per_s is None
    before = read_transactions(ROOTS.proc)[ext4.dev]
    assert fio(fio_bin, ext4.mnt / "u.dat", "--fdatasync=1", size="1m").wait(60) == 0
    ctx, _ = context(None, sample)
    value, _ = reader.read(ctx)
    assert isinstance(value, Jbd2Frame)
    after = read_transactions(ROOTS.proc)[ext4.dev]
    dev = value.devices[ext4.dev]
    assert dev.phases is None
    assert 0 < dev.commits <= after - before  # read between our two reads of the kernel's
    assert Jbd2Part().disk_json(value, ext4.dev)["journal"]["locked_us"] is None


XFS_LINE = (
    "On XFS, syncs made through a syscall are timed, per file; io_uring's are not seen, and "
    "XFS has no jbd2 journal (no journal figures)."
)
"""What docs/sync.md says of XFS; this test is where it comes from."""


def test_what_works_on_xfs(xfs: Mounted, fio_bin: str) -> None:
    target = xfs.mnt / "wal.dat"
    reader = SyncPart().reader(ROOTS)
    run = traced_run(
        lambda: fio(fio_bin, target, "--fdatasync=1", "--ioengine=psync", size="4m"), reader
    )
    lat = run.job["sync"]["lat_ns"]
    frame, _ = reader.read(context(run.sync)[0])
    assert isinstance(frame, SyncFrame)
    doc = sync_summary(frame.devices[xfs.dev])
    # works: syscall syncs, counted once, timed as fio times them, named by file
    assert run.counted(doc["count"], lat["N"]), (doc["count"], lat["N"], run.ticks)
    assert close_to(doc["p50_us"], lat["percentile"]["50.000000"]), (doc, lat["percentile"])
    assert doc["by_file"][0]["path"] == str(target)
    # no journal figures
    journal_frame, _ = Jbd2Part().reader(ROOTS).read(context(run.journal)[0])
    assert isinstance(journal_frame, Jbd2Frame)
    assert xfs.dev not in journal_frame.devices
    # io_uring's syncs are not seen
    ring = xfs.mnt / "ring.dat"
    reader = SyncPart().reader(ROOTS)
    run = traced_run(
        lambda: fio(fio_bin, ring, "--fsync=1", "--ioengine=io_uring", size="1m"), reader
    )
    assert run.job["sync"]["lat_ns"]["N"] > 50
    frame, _ = reader.read(context(run.sync)[0])
    assert isinstance(frame, SyncFrame)
    assert xfs.dev not in frame.devices or not frame.devices[xfs.dev].calls
    assert XFS_LINE in (Path(__file__).parents[2] / "docs" / "sync.md").read_text()
