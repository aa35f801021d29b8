"""Why a device is slow, for real: a v1 blkio throttle on a loop device is the limit in
force and the verdict names it; a dirty-heavy buffered writer moves the writeback figures and
the verdict, with the tracer off too; a CPU-bound host with a light load is CPU pressure; a
loop device held at its backing disk's limit on a busy CPU is capped, never cleared."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.sampling.clock import frames_on_schedule
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import CGROUPS, Frame
from iotop_plus.sampling.memory.dirty import WRITEBACK, MemoryPart
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.why.diagnosis import Diagnosis, diagnose
from iotop_plus.why.lookback import LookbackFeed
from tests.e2e.test_who_issuers_real import BLKIO_V1, blkio_cgroup, fio_in_cgroup
from tests.support.cli import cli_argv, cli_env, run_cli
from tests.support.wait import holds_within

pytestmark = [pytest.mark.root, pytest.mark.slow]

RIOPS = 50
"""The read IOPS limit the throttle test sets (fio asks for 2,500)."""


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (cgroups, sysctls, loop devices)")


def test_a_v1_throttle_is_the_limit_in_force_and_the_verdict_names_it(
    make_loop, fio_bin: str, tmp_path: Path
) -> None:
    need_root()
    dev = make_loop(64)
    devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
    with blkio_cgroup("throttle") as cgroup:
        where = BLKIO_V1 / cgroup.lstrip("/")
        (where / "blkio.throttle.read_iops_device").write_text(f"{devno} {RIOPS}\n")
        fio = fio_in_cgroup(dev, cgroup, 30, realtime=True)
        try:
            served = where / "blkio.throttle.io_serviced"
            assert holds_within(lambda: f"{devno} Read 0" not in served.read_text(), 15)
            assert f"{devno} Read" in served.read_text()
            state = tmp_path / "state"
            snap = run_cli("snapshot", "--diagnose", "-f", "json", "-i", "3", dev, state=state)
            top = run_cli("top", "--by", "cgroup", "-f", "json", "-i", "3", "-c", "1", state=state)
        finally:
            fio.kill()
            fio.wait()
    assert snap.returncode == 0, snap.stderr
    [disk] = json.loads(snap.stdout)["sysstat"]["hosts"][0]["statistics"][0]["disk"]
    # fio is held at the limit: about 50 reads a second, not 2,500.
    assert disk["r/s"] <= RIOPS * 1.2
    first = disk["diagnosis"][0]
    assert first["cause"] == "throttled" and first["confidence"] == "high", disk["diagnosis"]
    evidence = first["evidence"]
    assert (evidence["cgroup"], evidence["limit"], evidence["limit_value"]) == (
        cgroup,
        "riops",
        RIOPS,
    )
    assert evidence["used_pct"] >= 90 and evidence["source"] == "blkio.throttle"
    assert "throttled" not in disk["unchecked"]
    assert top.returncode == 0, top.stderr
    assert top.stderr.count("buffered writes to the root cgroup") == 1
    rows = {r["cgroup"]: r for r in json.loads(top.stdout)["statistics"][0]["cgroups"]}
    limited = rows[cgroup]["devices"][dev]
    assert limited["limits"] == {
        "rbps": None,
        "wbps": None,
        "riops": RIOPS,
        "wiops": None,
        "source": "blkio.throttle",
    }
    assert limited["throttled"] is True


SYSCTLS = ("dirty_background_bytes", "dirty_background_ratio", "dirty_bytes", "dirty_ratio")


@contextlib.contextmanager
def dirty_background_at(nbytes: int) -> Iterator[None]:
    """The flusher starts at ``nbytes`` of dirty memory; every vm.dirty_* put back after
    (a ratio is restored by writing it, which sets its bytes twin back to 0)."""
    vm = Path("/proc/sys/vm")
    before = {name: (vm / name).read_text().strip() for name in SYSCTLS}
    (vm / "dirty_background_bytes").write_text(str(nbytes))
    try:
        yield
    finally:
        for pair in (SYSCTLS[:2], SYSCTLS[2:]):
            by_bytes, by_ratio = pair
            name = by_bytes if before[by_bytes] != "0" else by_ratio
            (vm / name).write_text(before[name])
        after = {name: (vm / name).read_text().strip() for name in SYSCTLS}
        assert after == before


@contextlib.contextmanager
def mounted_ext4(dev: str, where: Path) -> Iterator[Path]:
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    where.mkdir()
    subprocess.run(["mount", f"/dev/{dev}", str(where)], check=True, capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


def test_a_dirty_heavy_buffered_writer_moves_the_writeback_figures_and_the_verdict(
    make_loop, tmp_path: Path
) -> None:
    need_root()
    dev = make_loop(512)
    source = LiveSource()
    frames: list[Frame] = []

    def storm_seen() -> bool:
        frame = source.next_frame()
        frames.append(frame)
        return "writeback" in diagnose(frame, dev).held

    try:
        with mounted_ext4(dev, tmp_path / "mnt") as mnt, dirty_background_at(16 << 20):
            os.sync()  # start below the threshold, whatever else this host wrote
            before = source.next_frame()
            memory = before.get(MemoryPart)
            assert memory is not None and memory.dirty_background_threshold_kB
            assert memory.dirty_background_threshold_kB == 16 * 1024
            assert not memory.over_background, memory
            writer = subprocess.Popen(
                ["dd", "if=/dev/zero", f"of={mnt / 'big'}", "bs=1M", "count=300"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                assert holds_within(storm_seen, 60), [f.get(MemoryPart) for f in frames[-3:]]
            finally:
                writer.kill()
                writer.wait()
    finally:
        source.close()
    storm = frames[-1]
    memory = storm.get(MemoryPart)
    assert memory is not None and memory.over_background
    cause = next(c for c in diagnose(storm, dev).causes if c.cause == "writeback")
    assert cause.evidence["dirty_kB"] >= 16 * 1024 and cause.evidence["w/s"] > 0
    # The rise over the background threshold was marked on the charts.
    marks = [e for f in [before, *frames] for e in f.events if e.kind == WRITEBACK]
    assert marks and "writeback starts" in marks[0].text


BUSY = "import time\nend = time.monotonic() + 90\nwhile time.monotonic() < end:\n    pass\n"


def test_a_cpu_bound_host_with_a_light_load_is_cpu_pressure(make_loop, fio_bin: str) -> None:
    need_root()
    dev = make_loop(64)
    # More busy loops than cores, so some task always waits for a CPU (PSI cpu "some"): one
    # loop a core left the pressure below 30 % on a quiet host.
    cores = os.cpu_count() or 2
    loops = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2 * cores + 1)]
    fio = subprocess.Popen(
        [
            fio_bin,
            "--name=light",
            f"--filename=/dev/{dev}",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--readonly",
            "--thread",  # the job is a thread: killing fio ends it (a forked job would live on)
            "--rate_iops=200",
            "--time_based",
            "--runtime=90",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    source = LiveSource()
    seen: list[Frame] = []

    def cpu_pressure_named() -> bool:
        frame = source.next_frame()
        seen.append(frame)
        return "cpu" in diagnose(frame, dev).held

    try:
        source.next_frame()
        assert holds_within(cpu_pressure_named, 60), [f.pressure for f in seen[-2:]]
    finally:
        for child in (*loops, fio):
            child.kill()
            child.wait()
        source.close()
    frame = seen[-1]
    verdict = diagnose(frame, dev)
    assert frame.pressure is not None
    cpu = frame.pressure.resources["cpu"].some
    assert cpu is not None and cpu.avg10 >= 30
    assert not {"saturated", "capped", "queue", "throttled"} & set(verdict.held), verdict.as_json()
    assert verdict.causes[0].cause == "cpu" and "no device-side cause" in verdict.causes[0].text


def test_a_recorded_throttle_is_named_by_the_recorded_verdict(
    make_loop, fio_bin: str, tmp_path: Path
) -> None:
    """``record`` keeps the limits in force (type ``L``) with the cgroups and memory (``M``):
    ``snapshot --from`` names the throttle afterwards, on this host or any other."""
    need_root()
    dev = make_loop(64)
    devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
    recordings, state = tmp_path / "rec", tmp_path / "state"
    with blkio_cgroup("recorded") as cgroup:
        where = BLKIO_V1 / cgroup.lstrip("/")
        (where / "blkio.throttle.read_iops_device").write_text(f"{devno} {RIOPS}\n")
        fio = fio_in_cgroup(dev, cgroup, 30, realtime=True)
        recorder = subprocess.Popen(
            cli_argv("record", "-i", "1", "--dir", str(recordings), state=state),
            env=cli_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # Until a recorded interval (fio held at the limit) is judged throttled.
            assert holds_within(
                lambda: (
                    "throttled"
                    in run_cli(
                        "snapshot", "--from", str(recordings), "-f", "json", dev, state=state
                    ).stdout
                ),
                30,
            )
        finally:
            recorder.terminate()
            recorder.wait()
            fio.kill()
            fio.wait()
    done = run_cli("snapshot", "--from", str(recordings), "-f", "json", dev, state=state)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"]
    held = [s for s in stats if s["disk"] and s["disk"][0]["diagnosis"][0]["cause"] == "throttled"]
    assert held
    [disk] = held[-1]["disk"]
    evidence = disk["diagnosis"][0]["evidence"]
    assert (evidence["cgroup"], evidence["limit"], evidence["limit_value"]) == (
        cgroup,
        "riops",
        RIOPS,
    )
    assert held[-1]["memory"]["dirty_background_threshold_kB"] > 0


def busy_loops(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` Python busy loops (90 s at most), so tasks wait for a CPU."""
    return [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(count)]


def fio_reader(dev: str, cgroup: str, depth: int, seconds: int, rate: int | None = None) -> Any:
    """fio random reads of ``dev`` at ``depth`` (libaio, direct), inside the v1 blkio
    ``cgroup`` and at SCHED_FIFO 1, so two busy loops per core do not starve its queue."""
    procs = BLKIO_V1 / cgroup.lstrip("/") / "cgroup.procs"

    def enter() -> None:
        procs.write_text(str(os.getpid()))
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))

    argv = [
        "fio",
        f"--name=capped-{dev}",
        f"--filename=/dev/{dev}",
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--ioengine=libaio",
        f"--iodepth={depth}",
        "--readonly",
        "--thread",
        "--time_based",
        f"--runtime={seconds}",
        *([f"--rate_iops={rate}"] if rate else []),
    ]
    return subprocess.Popen(
        argv, preexec_fn=enter, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


CAP_IOPS = 300
"""The backing disk's read limit for the reader's cgroup: a queue of 32 waits ~107 ms."""


def test_a_loop_device_held_at_its_backing_disks_limit_on_a_busy_cpu_is_capped(
    make_loop, fio_bin: str, tmp_path: Path
) -> None:
    """A direct-I/O loop device over a file on another loop device, whose reads the reader's
    cgroup may do 300 times a second, read at queue depth 32 while two busy loops a core keep
    CPU pressure over 60 %: saturated against its own quiet baseline and capped by the device
    below, named; never cleared by the CPU pressure."""
    from tests.support.loopdev import loop_device

    need_root()
    under = make_loop(160)
    devno = Path(f"/sys/block/{under}/dev").read_text().strip()
    source = LiveSource()
    source.want(CGROUPS, True)
    ticks = frames_on_schedule(source, 1.0, 1000)  # the product's own 1 s clock
    feed = LookbackFeed()
    seen: list[tuple[Frame, Diagnosis]] = []

    def judge() -> Diagnosis:
        _, frame = next(ticks)
        verdict = diagnose(frame, dev, feed.before(frame))
        feed.add(frame)
        seen.append((frame, verdict))
        return verdict

    loops: list[subprocess.Popen[bytes]] = []
    try:
        with (
            mounted_ext4(under, tmp_path / "mnt") as mnt,
            loop_device(mnt, 64, "above.img", direct_io=True, filled=True) as dev,
            blkio_cgroup("capped") as cgroup,
        ):
            # The inventory knows what is below: the device the backing file is on.
            above = next(ticks)[1].inventory.get(dev)
            assert above is not None and above.loop_dio is True
            assert above.loop_backing_device == under, above
            (BLKIO_V1 / cgroup.lstrip("/") / "blkio.throttle.read_iops_device").write_text(
                f"{devno} {CAP_IOPS}\n"
            )
            # Quiet first (a queue of one at a third of the limit): the device's baseline.
            light = fio_reader(dev, cgroup, 1, 8, rate=CAP_IOPS // 3)
            try:
                for _ in range(5):
                    judge()
            finally:
                light.kill()
                light.wait()
            assert feed.before(next(ticks)[1]).baseline(dev) is not None
            loops = busy_loops(2 * (os.cpu_count() or 2))
            held = fio_reader(dev, cgroup, 32, 60)
            try:
                assert holds_within(lambda: "capped" in judge().held, 40), [
                    v.line() for _, v in seen[-3:]
                ]
                for _ in range(5):  # and it stays so: never cleared by the CPU pressure
                    judge()
            finally:
                held.kill()
                held.wait()
    finally:
        for child in loops:
            child.kill()
            child.wait()
        source.close()
    first = next(i for i, (_, v) in enumerate(seen) if "capped" in v.held)
    for _, verdict in seen[first:]:
        assert {"capped", "saturated"} & set(verdict.held), verdict.as_json()
        assert "cpu" not in verdict.held and "not the problem" not in verdict.line()
    capped = next(c for _, v in reversed(seen) for c in v.causes if c.cause == "capped")
    assert (capped.evidence["below"], capped.evidence["below_cause"]) == (under, "throttled")
    assert (capped.evidence["cgroup"], capped.evidence["limit_value"]) == (cgroup, CAP_IOPS)
    assert capped.evidence["aqu-sz"] >= 16 and capped.evidence["%util"] >= 90
    pressure = [
        some
        for f, _ in seen[first:]
        if f.pressure is not None
        and (cpu := f.pressure.resources.get("cpu")) is not None
        and cpu.some is not None
        and (some := cpu.some.avg10) is not None
    ]
    assert pressure and max(pressure) >= 60, pressure  # the CPU was busy meanwhile
    assert "cpu_some_avg10" in capped.evidence


def test_a_buffered_writers_storm_reads_writeback_with_the_tracer_off(
    make_loop, fio_bin: str, tmp_path: Path
) -> None:
    """Dirty memory held at the background threshold while the flusher writes back: the
    verdict says writeback from the frames alone (no tracer, no issuers)."""
    need_root()
    dev = make_loop(512)
    source = LiveSource()
    ticks = frames_on_schedule(source, 1.0, 1000)
    feed = LookbackFeed()
    frames: list[Frame] = []

    def storm_seen() -> bool:
        _, frame = next(ticks)
        verdict = diagnose(frame, dev, feed.before(frame))
        feed.add(frame)
        frames.append(frame)
        return "writeback" in verdict.held

    try:
        with mounted_ext4(dev, tmp_path / "mnt") as mnt, dirty_background_at(32 << 20):
            os.sync()
            for _ in range(3):  # frames before the storm, as a running view has them
                storm_seen()
            # Buffered writes over and over a 300 MB file for as long as the test looks: the
            # storm lasts (a dd of a few hundred MB was over before four frames on a fast day).
            writer = subprocess.Popen(
                [
                    "fio",
                    "--name=storm",
                    f"--filename={mnt / 'big'}",
                    "--rw=write",
                    "--bs=1M",
                    "--size=300M",
                    "--ioengine=psync",
                    "--time_based",
                    "--runtime=90",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                assert holds_within(storm_seen, 60), [f.get(MemoryPart) for f in frames[-3:]]
                # The flusher drains dirty in bursts (to nothing and back over the threshold):
                # the verdict stays writeback through them while the writer writes. On a
                # loaded host the loop device may complete nothing for a whole frame (200 MB
                # under writeback, no page written back in it): that frame alone may not say so.
                steady = [storm_seen() for _ in range(5)]
            finally:  # SIGTERM: fio ends its job process (SIGKILL would leave it writing)
                writer.terminate()
                writer.wait(60)
    finally:
        source.close()
    assert sum(steady) >= 4, [(f.get(MemoryPart), f.rates.get(dev)) for f in frames[-5:]]
    storm = frames[-1]
    assert storm.get(IssuersPart) is None and storm.latency is None  # the tracer never ran
    memory = storm.get(MemoryPart)
    assert memory is not None and memory.written_pages is not None
    verdict = diagnose(storm, dev, feed.before(storm))
    cause = next(c for c in verdict.causes if c.cause == "writeback")
    assert cause.evidence["w/s"] > 0
