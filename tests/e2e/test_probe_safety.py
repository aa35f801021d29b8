"""The probe never loses anyone's data: refused targets, cancel and signals leave nothing."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.run_types import ProbeError, ProbeProgress, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner, stop_all_probes
from iotop_plus.probe.target import ConfirmationNeeded, TargetError, live_probe_files, plan_target
from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from tests.support.mounts import unmount
from tests.support.probe_targets import run_unless_losetup, unless_losetup

pytestmark = [pytest.mark.slow]

WRITE_PRESETS = sorted(p.name for p in PRESETS.values() if p.writes)


def _request(preset: str, target: Path | str, runtime: int = 1, confirm: str | None = None):
    p = PRESETS[preset]
    return ProbeRequest(p, replace(p.params, runtime_s=runtime, size_mb=32), str(target), confirm)


def _fio_processes_on(path: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd and "fio" in os.path.basename(cmd[0]) and any(str(path) in a for a in cmd):
            found.append(proc)
    return found


def _probe_files_in(directory: Path) -> list[Path]:
    """Probe files in their private 0700 subdirectories of ``directory``."""
    found = []
    for sub in directory.glob(".iotop-plus-*"):
        assert sub.is_dir() and (sub.stat().st_mode & 0o777) == 0o700
        found += [p for p in sub.iterdir() if p.name.startswith("iotop-plus-probe-")]
    return found


def _checksums(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@contextmanager
def _mounted_ext4(dev: str, mountpoint: Path) -> Iterator[Path]:
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    mountpoint.mkdir()
    subprocess.run(["mount", f"/dev/{dev}", str(mountpoint)], check=True, capture_output=True)
    try:
        yield mountpoint
    finally:
        unmount(str(mountpoint))


@pytest.mark.root
async def test_write_presets_on_a_loop_device_with_a_mounted_ext4_are_refused(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    with _mounted_ext4(dev, tmp_path / "mnt") as mnt:
        for i in range(5):
            (mnt / f"file{i}.dat").write_bytes(os.urandom(256 * 1024))
        (mnt / "sub").mkdir()
        (mnt / "sub" / "notes.txt").write_text("precious\n" * 1000)
        os.sync()
        before = _checksums(mnt)
        runner = ProbeRunner(Roots(), fio_bin)
        for preset in WRITE_PRESETS:
            for confirm in (None, dev):
                with pytest.raises(ProbeError, match="refusing to write") as info:
                    await runner.run(_request(preset, f"/dev/{dev}", confirm=confirm))
                assert f"is mounted on {mnt}" in str(info.value)
        cli = subprocess.run(
            [
                sys.executable,
                "-m",
                "iotop_plus",
                "probe",
                "wal",
                "-t",
                f"/dev/{dev}",
                "--confirm",
                dev,
                "-r",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert cli.returncode == 1 and "refusing to write" in cli.stderr
        assert "Traceback" not in cli.stderr
        assert _checksums(mnt) == before
    # Unmounted, the filesystem signature alone still refuses the write.
    with pytest.raises(TargetError, match="ext4"):
        plan_target(f"/dev/{dev}", PRESETS["wal"], PRESETS["wal"].params, Roots(), confirm=dev)
    with _mounted_ext4_again(dev, tmp_path / "mnt") as mnt:
        assert _checksums(mnt) == before


@contextmanager
def _mounted_ext4_again(dev: str, mountpoint: Path) -> Iterator[Path]:
    subprocess.run(["mount", "-o", "ro", f"/dev/{dev}", str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        unmount(str(mountpoint))


@pytest.mark.root
async def test_a_write_probe_on_an_unused_device_needs_its_name_typed(
    make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    wal = PRESETS["wal"]
    with pytest.raises(ConfirmationNeeded) as info:
        unless_losetup(lambda: plan_target(f"/dev/{dev}", wal, wal.params, Roots()))
    assert info.value.device == dev
    with pytest.raises(ConfirmationNeeded):
        plan_target(f"/dev/{dev}", wal, wal.params, Roots(), confirm="loop999")
    request = _request("wal", f"/dev/{dev}", confirm=dev)
    outcome = await run_unless_losetup(ProbeRunner(Roots(), fio_bin), request)
    assert "--readonly" not in outcome.argv
    assert outcome.result.write is not None and outcome.result.fsync is not None


def test_a_missing_target_directory_is_refused_and_not_created(tmp_path: Path) -> None:
    # The target is checked before fio is looked for: this holds where fio is missing.
    missing = tmp_path / "no" / "such" / "dir"
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    with search_path_override([str(empty)]), pytest.raises(ProbeError, match="does not exist"):
        asyncio.run(ProbeRunner(Roots()).run(_request("randread", missing)))
    proc = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "probe", "randread", "-t", str(missing), "-r", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "does not exist" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "no").exists()


def test_an_existing_file_is_never_a_target(tmp_path: Path) -> None:
    victim = tmp_path / "data.db"
    victim.write_bytes(b"x" * 4096)
    with pytest.raises(TargetError, match="neither a directory nor a block device"):
        plan_target(str(victim), PRESETS["randread"], PRESETS["randread"].params, Roots())
    assert victim.read_bytes() == b"x" * 4096


@pytest.mark.root
def test_the_probe_file_is_sized_from_free_space(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100m", "tmpfs", str(small)], check=True)
    try:
        params = replace(PRESETS["randread"].params, size_mb=1024)
        target = plan_target(str(small), PRESETS["randread"], params, Roots())
        assert target.size_bytes <= 100 * 2**20 // 4
        assert target.note and "capped" in target.note
        (small / "filler").write_bytes(b"\0" * 70 * 2**20)
        with pytest.raises(TargetError, match="not enough free space"):
            plan_target(str(small), PRESETS["randread"], params, Roots())
    finally:
        unmount(str(small))


async def test_a_cancelled_probe_leaves_no_file_and_no_fio(tmp_path: Path, fio_bin: str) -> None:
    started = asyncio.Event()

    def progress(_: ProbeProgress) -> None:
        started.set()

    runner = ProbeRunner(Roots(), fio_bin)
    task = asyncio.ensure_future(runner.run(_request("mixed", tmp_path, runtime=60), progress))
    await asyncio.wait_for(started.wait(), 30)
    assert _probe_files_in(tmp_path)
    assert _fio_processes_on(tmp_path)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(tmp_path.iterdir()) == []
    assert _fio_processes_on(tmp_path) == []
    assert live_probe_files() == ()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_cli_during_a_probe_leaves_no_file_and_no_fio(
    signum: int, tmp_path: Path, fio_bin: str
) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "probe",
            "index",
            "-t",
            str(tmp_path),
            "-r",
            "60",
            "-s",
            "size=32",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # wait for fio's first live report
            if "s left" in line:
                break
        assert _probe_files_in(tmp_path)
        assert _fio_processes_on(tmp_path)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum
    assert "cancelled" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    assert _fio_processes_on(tmp_path) == []


async def test_stop_all_probes_kills_fio_and_removes_the_file_at_once(
    tmp_path: Path, fio_bin: str
) -> None:
    # What a signal handler or atexit in the TUI calls when it cannot wait for the task.
    started = asyncio.Event()
    runner = ProbeRunner(Roots(), fio_bin)
    task = asyncio.ensure_future(
        runner.run(_request("index", tmp_path, runtime=60), lambda _: started.set())
    )
    await asyncio.wait_for(started.wait(), 30)
    stop_all_probes()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ProbeError, match="killed by signal 9"):
        await task
    assert _fio_processes_on(tmp_path) == []


@pytest.mark.root
def test_a_device_a_program_holds_open_is_refused_for_writes(
    make_loop: Callable[..., str],
) -> None:
    dev = make_loop(size_mb=64)
    holder = subprocess.Popen(["sh", "-c", f"exec 3</dev/{dev}; echo ready; exec sleep 60"],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        wal = PRESETS["wal"]
        with pytest.raises(TargetError, match=r"pid \d+ \(sleep\) has /dev/loop\d+ open"):
            plan_target(f"/dev/{dev}", wal, wal.params, Roots(), confirm=dev)
    finally:
        holder.kill()
        holder.wait()
