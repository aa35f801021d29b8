"""Attacks on a running probe: what fio writes is what was checked, whatever others do.

Each test plays the attacker for real (a symlink flipped as fast as a process can, a user
who owns the target directory, a SIGKILL) on the test's own loop devices and directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from iotop_plus.probe.presets import PRESETS
from iotop_plus.probe.run_types import ProbeError, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import ConfirmationNeeded, TargetError, live_probe_files, plan_target
from iotop_plus.programs import search_path_override
from iotop_plus.roots import Roots
from tests.support.loopdev import attach, detach, require_loop_devices, start_at_loop_defaults
from tests.support.mounts import unmount
from tests.support.nobody import nobody_directory, nobody_env, nobody_python
from tests.support.probe_targets import run_unless_losetup, unless_losetup

pytestmark = [pytest.mark.slow, pytest.mark.root]


def _request(preset: str, target: Path | str, *, confirm: str | None = None, size_mb: int = 16):
    p = PRESETS[preset]
    return ProbeRequest(p, replace(p.params, runtime_s=1, size_mb=size_mb), str(target), confirm)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ext4_with_a_file(dev: str, mnt: Path) -> str:
    """mkfs.ext4 on our own loop device, one file on it; returns the file's checksum."""
    mkfs = subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], capture_output=True, text=True)
    assert mkfs.returncode == 0, mkfs.stderr
    mnt.mkdir(exist_ok=True)
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        (mnt / "precious.dat").write_bytes(os.urandom(2 * 2**20))
        digest = _sha256(mnt / "precious.dat")
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)
    return digest


def _assert_ext4_intact(dev: str, mnt: Path, digest: str) -> None:
    fsck = subprocess.run(
        ["fsck.ext4", "-n", "-f", f"/dev/{dev}"], capture_output=True, text=True, check=False
    )
    assert fsck.returncode == 0, f"the filesystem on {dev} was damaged: {fsck.stdout[-400:]}"
    subprocess.run(["mount", "-o", "ro", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        assert _sha256(mnt / "precious.dat") == digest
    finally:
        subprocess.run(["umount", str(mnt)], check=True, capture_output=True)


# The attacker: re-points LINK between A and B as fast as it can. In "fio" mode it points at
# A (the confirmed blank device) while no fio child of PARENT runs, and flips A/B flat out
# while one does: the strongest timing against a check-then-open. In "blind" mode it flips
# all the time, checks included.
_FLIPPER = r"""
import os, sys
link, a, b, parent, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
tmp = link + ".new"
def point(dev):
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    os.symlink(dev, tmp)
    os.replace(tmp, link)
def fio_running():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/comm") as fh:
                comm = fh.read().strip()
        except OSError:
            continue
        if fields[1] == parent and comm in ("fio", "setpriv"):
            return True
    return False
print("ready", flush=True)
while True:
    if mode == "fio" and not fio_running():
        point(a)
        continue
    for _ in range(50):
        point(b)
        point(a)
"""


@contextmanager
def _flipping(link: Path, a: str, b: str, mode: str) -> Iterator[None]:
    os.symlink(f"/dev/{a}", link)
    proc = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(link), f"/dev/{a}", f"/dev/{b}", str(os.getpid()),
         mode],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield
    finally:
        proc.kill()
        proc.wait()


async def test_a_symlink_flipped_to_a_filesystem_while_probes_start_never_gets_it_written(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    blank, victim = make_loop(size_mb=64), make_loop(size_mb=64)
    digest = _ext4_with_a_file(victim, tmp_path / "mnt")
    runner = ProbeRunner(Roots(), fio_bin)
    link = tmp_path / "swap"
    outcomes = {"ran": 0, "refused": 0}
    for mode, runs in (("fio", 6), ("blind", 4)):
        with _flipping(link, blank, victim, mode):
            for _ in range(runs):
                try:
                    outcome = await runner.run(_request("wal", link, confirm=blank))
                except ProbeError as exc:
                    # Seen pointing at the filesystem: refused, by name or by content.
                    assert victim in str(exc), str(exc)
                    outcomes["refused"] += 1
                else:
                    assert outcome.target.device == blank
                    assert outcome.result.write is not None
                    outcomes["ran"] += 1
        link.unlink()
    assert outcomes["ran"] >= 6, outcomes
    _assert_ext4_intact(victim, tmp_path / "mnt", digest)


# The attacker owns the directory: whenever a probe's name appears in it, it is renamed away
# and replaced by a symlink to root's file; it also tries to enter probe directories.
_SWAPPER = r"""
import os, sys
d, victim = sys.argv[1], sys.argv[2]
print("ready", flush=True)
n = 0
while True:
    for name in os.listdir(d):
        if "iotop-plus" not in name or ".moved" in name:
            continue
        p = os.path.join(d, name)
        if os.path.islink(p):
            continue
        n += 1
        try:
            os.rename(p, f"{p}.moved{n}")
            os.symlink(victim, p)
        except OSError:
            pass
        try:
            for inner in os.listdir(f"{p}.moved{n}"):
                q = os.path.join(f"{p}.moved{n}", inner)
                os.rename(q, q + ".moved")
                os.symlink(victim, q)
        except OSError:
            pass
"""


async def test_a_user_owning_the_directory_cannot_redirect_roots_probe(
    tmp_path: Path, fio_bin: str
) -> None:
    python = nobody_python()
    victim = tmp_path / "root-only.db"
    victim.write_bytes(os.urandom(24 * 2**20))
    victim.chmod(0o600)
    digest = _sha256(victim)
    runner = ProbeRunner(Roots(), fio_bin)
    with nobody_directory() as shared:
        attacker = subprocess.Popen(
            [*python, "-c", _SWAPPER, str(shared), str(victim)],
            stdout=subprocess.PIPE, text=True, env=nobody_env("/usr/bin:/bin"), cwd="/",
        )  # fmt: skip
        try:
            assert attacker.stdout is not None and attacker.stdout.readline().strip() == "ready"
            for _ in range(4):
                outcome = await runner.run(_request("wal", shared))
                assert outcome.result.write is not None
        finally:
            attacker.kill()
            attacker.wait()
        moved = [p.name for p in shared.iterdir() if ".moved" in p.name]
        assert moved, "the attacker never got to rename anything: the test proves nothing"
        # The renamed probe directories stay (root's, empty): nothing of ours is left in them.
        for p in shared.iterdir():
            if p.is_dir() and not p.is_symlink():
                assert list(p.iterdir()) == []
    assert _sha256(victim) == digest
    assert live_probe_files() == ()


async def test_a_probe_file_replaced_inside_the_probe_directory_aborts_the_probe(
    tmp_path: Path, fio_bin: str
) -> None:
    swapped: list[Path] = []

    def replace_probe_file(_: object) -> None:
        if not swapped:  # once fio runs: what a root-owned intruder could do
            (path,) = live_probe_files()
            path.rename(path.with_name(path.name + ".moved"))
            path.symlink_to(tmp_path / "elsewhere")
            swapped.append(path)

    with pytest.raises(ProbeError, match=r"not a regular file.*probe aborted"):
        await ProbeRunner(Roots(), fio_bin).run(_request("randread", tmp_path), replace_probe_file)
    assert swapped and list(tmp_path.iterdir()) == []


def test_kill_9_of_the_probe_kills_fio_and_the_next_probe_removes_the_leftover(
    tmp_path: Path, fio_bin: str
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100m", "tmpfs", str(small)], check=True)
    fio: list[psutil.Process] = []
    try:
        # One job at QD1: eight io_uring jobs on a tmpfs keep both cores of a 2-core host in
        # the kernel, and every other process there waited up to a minute for a CPU.
        params = replace(PRESETS["randread"].params, size_mb=1024)
        clean_size = plan_target(str(small), PRESETS["randread"], params, Roots()).size_bytes
        cli = subprocess.Popen(
            [sys.executable, "-m", "iotop_plus", "probe", "index", "-t", str(small), "-r", "60",
             "-s", "size=1024", "-s", "numjobs=1", "-s", "iodepth=1"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert cli.stderr is not None
        for line in cli.stderr:
            if "s left" in line:
                break
        fio = [p for p in psutil.Process(cli.pid).children(recursive=True) if p.name() == "fio"]
        assert fio, "no fio running under the probe"
        for p in fio:  # stopped, fio cannot die of a write to the dead pipe: only of SIGKILL
            p.suspend()
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        alive = _alive_after(fio, 0.5)
        # PR_SET_PDEATHSIG kills it at once; without it fio lives on (until its next status
        # write to the dead pipe, were it running).
        assert alive == [], "fio outlived the probe killed with SIGKILL"
        assert os.listdir(small), "expected the killed probe's leftover"
        outcome = asyncio.run(ProbeRunner(Roots(), fio_bin).run(
            ProbeRequest(PRESETS["randread"], replace(params, runtime_s=1), str(small))
        ))  # fmt: skip
        assert outcome.target.size_bytes == clean_size, "sized before the leftover was removed"
        assert outcome.target.note and "removed 1 leftover probe directory" in outcome.target.note
        assert os.listdir(small) == []
    finally:
        for p in fio:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(fio, timeout=5)
        unmount(str(small))


def _alive_after(procs: list[psutil.Process], seconds: float) -> list[psutil.Process]:
    """Those still running after ``seconds``.

    A zombie is dead (nobody may reap it here) once its job threads have exited too.
    """
    deadline = time.monotonic() + seconds
    while True:
        alive = []
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess, FileNotFoundError):
                threads = len(os.listdir(f"/proc/{p.pid}/task"))
                if p.status() != psutil.STATUS_ZOMBIE or threads > 1:
                    alive.append(p)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)


@contextmanager
def _partitioned_loop(directory: Path) -> Iterator[str]:
    """A loop device with partscan on our own file: p1 24 MiB blank, p2 the rest."""
    require_loop_devices()
    backing = directory / "disk.img"
    with open(backing, "xb") as fh:
        fh.truncate(64 * 2**20)
        fh.seek(446)  # a DOS partition table, as sfdisk writes it: two Linux partitions
        for start, sectors in ((2048, 24 * 2048), (26 * 2048, 38 * 2048)):
            fh.write(b"\0\0\0\0\x83\0\0\0" + start.to_bytes(4, "little"))
            fh.write(sectors.to_bytes(4, "little"))
        fh.seek(510)
        fh.write(b"\x55\xaa")
    name = attach(backing, partscan=True)
    dev = f"/dev/{name}"
    try:
        start_at_loop_defaults(name)
        for _ in range(30):
            if Path(f"{dev}p2").exists() and Path(f"{dev}p1").exists():
                break
            time.sleep(0.1)
        else:
            pytest.skip("this kernel reads no partition tables (CONFIG_MSDOS_PARTITION is off)")
        yield name
    finally:
        detach(name, backing)
        backing.unlink(missing_ok=True)


async def test_a_blank_partition_is_write_probed_and_one_with_ext4_is_refused_plainly(
    tmp_path: Path, fio_bin: str
) -> None:
    with _partitioned_loop(tmp_path) as disk:
        blank, used = f"{disk}p1", f"{disk}p2"
        digest = _ext4_with_a_file(used, tmp_path / "mnt")
        wal = PRESETS["wal"]
        with pytest.raises(ConfirmationNeeded):
            unless_losetup(lambda: plan_target(f"/dev/{blank}", wal, wal.params, Roots()))
        outcome = await run_unless_losetup(
            ProbeRunner(Roots(), fio_bin), _request("wal", f"/dev/{blank}", confirm=blank)
        )
        assert outcome.target.device == blank and outcome.result.write is not None
        with pytest.raises(TargetError) as info:
            unless_losetup(
                lambda: plan_target(f"/dev/{used}", wal, wal.params, Roots(), confirm=used)
            )
        message = str(info.value)
        assert message == (
            f"refusing to write to /dev/{used}: {used} holds an ext4 filesystem (blkid) "
            "(pick a directory instead)"
        )
        _assert_ext4_intact(used, tmp_path / "mnt", digest)


def test_a_plain_user_probing_a_root_only_device_gets_one_line(
    make_loop: Callable[..., str],
) -> None:
    python = nobody_python()
    dev = make_loop(size_mb=64)
    proc = subprocess.run(
        [*python, "-m", "iotop_plus", "probe", "randread", "-t", f"/dev/{dev}", "-r", "1"],
        capture_output=True, text=True, timeout=60, check=False, env=nobody_env("/usr/bin:/bin"),
        cwd="/",
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == (
        f"iotop-plus: probe failed: cannot open /dev/{dev} for reading: permission denied "
        "(run as root, or as a user with access to the device)\n"
    )


# What ``blkid -p -o export`` prints for a blank partition (util-linux 2.38): where it sits in
# its parent's table, nothing about its content. For kernels that cannot scan partitions,
# a blkid that prints exactly this stands in on a whole loop device.
_BLANK_PARTITION = """DEVNAME=/dev/loop9p1
PART_ENTRY_SCHEME=dos
PART_ENTRY_UUID=5e2a6c1b-01
PART_ENTRY_TYPE=0x83
PART_ENTRY_NUMBER=1
PART_ENTRY_OFFSET=2048
PART_ENTRY_SIZE=49152
PART_ENTRY_DISK=7:9
"""


def _fake_blkid(directory: Path, output: str) -> Path:
    directory.mkdir()
    script = directory / "blkid"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\n")
    script.chmod(0o755)
    return directory


async def test_part_entry_keys_alone_are_no_signature_and_a_real_one_reads_plainly(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    blank, used = make_loop(size_mb=64), make_loop(size_mb=64)
    wal = PRESETS["wal"]
    with search_path_override([str(_fake_blkid(tmp_path / "bin", _BLANK_PARTITION))]):
        with pytest.raises(ConfirmationNeeded):
            unless_losetup(lambda: plan_target(f"/dev/{blank}", wal, wal.params, Roots()))
        outcome = await run_unless_losetup(
            ProbeRunner(Roots(), fio_bin), _request("wal", f"/dev/{blank}", confirm=blank)
        )
    assert outcome.result.write is not None
    digest = _ext4_with_a_file(used, tmp_path / "mnt")
    with pytest.raises(TargetError) as info:  # the real blkid
        unless_losetup(lambda: plan_target(f"/dev/{used}", wal, wal.params, Roots(), confirm=used))
    assert str(info.value) == (
        f"refusing to write to /dev/{used}: {used} holds an ext4 filesystem (blkid) "
        "(pick a directory instead)"
    )
    _assert_ext4_intact(used, tmp_path / "mnt", digest)
