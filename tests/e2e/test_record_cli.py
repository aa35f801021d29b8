"""The real ``iotop-plus record``: kill -9, restarts, two recorders, unsafe directories, a
full file system, bundles. Every run gets its own ``--state-dir`` under the test's tmp dir."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iotop_plus.record.format import FormatError
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.recorder import recording_files
from iotop_plus.record.timeline import open_timeline
from tests.support.mounts import unmount
from tests.support.wait import holds_within

pytestmark = pytest.mark.slow  # the recorder for seconds

REPO = Path(__file__).resolve().parents[2]


def _env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp),
        "XDG_STATE_HOME": str(tmp),
        "TZ": "UTC",
    }


def start(tmp: Path, *args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp / "state"), "record"]
    return subprocess.Popen(
        [*cmd, *args], env=_env(tmp), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp / "state"), *args]
    return subprocess.run(cmd, env=_env(tmp), capture_output=True, text=True, timeout=60)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


def samples_in_last(directory: Path, files: int) -> int:
    """Samples in the newest recording, 0 while there are fewer than ``files`` files or the
    newest has no header yet (just created, on a loaded machine)."""
    paths = recording_files(directory)
    if len(paths) < files:
        return 0
    try:
        rec = RecordingFile(paths[-1], follow=True)
    except FormatError:
        return 0
    try:
        return sum(c.n for c in rec.chunks)
    finally:
        rec.close()


def wait_samples(directory: Path, n: int, files: int = 1, timeout: float = 30) -> int:
    got = holds_within(lambda: samples_in_last(directory, files) >= n, timeout)
    assert got, f"the recorder did not write {n} samples in {timeout} s"
    return samples_in_last(directory, files)


def test_kill_9_loses_at_most_one_interval_and_a_restart_shows_the_gap(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    rec_dir = tmp_path / "state" / "recordings"
    first = start(tmp_path, "--interval", "0.5", "--processes", "3")
    procs.append(first)
    wait_samples(rec_dir, 5)
    before = time.time()
    first.send_signal(signal.SIGKILL)
    first.wait()
    [path] = recording_files(rec_dir)
    warnings: list[str] = []
    rec = RecordingFile(path, warnings.append)
    samples = [s for i in range(len(rec.chunks)) for s in rec.samples(i)]
    assert rec.chunks[-1].trailer is None  # killed mid-chunk: no trailer
    assert len(samples) >= 5
    # Every interval before the one in progress at the kill is there.
    assert samples[-1].sample.wall_time >= before - 2 * 0.5
    assert len(warnings) <= 1
    rec.close()
    time.sleep(1.2)  # a visible gap
    second = start(tmp_path, "--interval", "0.5")
    procs.append(second)
    wait_samples(rec_dir, 3, files=2)
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=20) == 0
    paths = recording_files(rec_dir)
    assert len(paths) == 2  # the restart appended a new file, the first was not rewritten
    closed = RecordingFile(paths[1])
    assert closed.chunks and closed.chunks[-1].trailer is not None  # SIGTERM closed the chunk
    timeline = open_timeline(rec_dir)
    restart = timeline.frame_at(closed.chunks[0].first_ns / 1e9)
    assert restart is not None and restart.elapsed_s is None  # rates do not span the gap
    last_before = timeline.step(restart.wall_time, -1)
    assert last_before is not None and restart.wall_time - last_before.wall_time > 1.0
    assert os.stat(paths[0]).st_mode & 0o777 == 0o600


def test_a_second_recorder_on_one_directory_refuses(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    first = start(tmp_path, "--interval", "0.5")
    procs.append(first)
    wait_samples(tmp_path / "state" / "recordings", 1)
    second = run(tmp_path, "record", "--interval", "0.5")
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"another recorder (pid {first.pid})" in lines[0]
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=20) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the unsafe-directory rules are for root")
def test_symlinked_or_world_writable_directories_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    got = run(tmp_path, "record", "--dir", str(tmp_path / "link"), "--count", "1")
    assert got.returncode == 1 and "is a symbolic link; refusing it" in got.stderr
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o1777)
    got = run(tmp_path, "record", "--dir", str(open_dir), "--count", "1")
    assert got.returncode == 1 and "writable by group or others" in got.stderr
    assert os.listdir(real) == [] and os.listdir(open_dir) == []
    nobody_owned = tmp_path / "theirs"
    nobody_owned.mkdir(mode=0o700)
    os.chown(nobody_owned, 65534, 65534)
    got = run(tmp_path, "record", "--dir", str(nobody_owned), "--count", "1")
    assert got.returncode == 1 and "owned by uid 65534" in got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_record_options_are_checked(tmp_path: Path) -> None:
    got = run(tmp_path, "record", "--retain", "soon")
    assert got.returncode == 2 and "not a duration" in got.stderr
    got = run(tmp_path, "record", "--max-size", "lots")
    assert got.returncode == 2 and "not a size" in got.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a file system needs root")
def test_a_full_file_system_is_reported_once_and_the_recorder_keeps_running(
    tmp_path: Path, make_loop: Callable[..., str], procs: list[subprocess.Popen[str]]
) -> None:
    dev = make_loop(size_mb=4)
    subprocess.run(["mkfs.ext2", "-q", "-F", "-m", "0", f"/dev/{dev}"], check=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True)
    try:
        filler = mnt / "filler"
        with open(filler, "wb") as fh:  # fill the file system, then leave ~24 KiB free
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        os.truncate(filler, max(0, filler.stat().st_size - 24 * 1024))
        rec_dir = mnt / "rec"
        recorder = start(tmp_path, "--dir", str(rec_dir), "--interval", "0.1", "--processes", "20")
        procs.append(recorder)
        deadline = time.monotonic() + 120  # an idle host writes ~50 B per sample
        while time.monotonic() < deadline and os.statvfs(mnt).f_bavail > 1:
            time.sleep(0.2)
        # Then until the recording stops growing: the last free block is used and the next
        # write got ENOSPC (how long that takes depends on the load of the machine).
        sizes: tuple[int, ...] = ()
        steady_since = time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - steady_since < 3.0:
            now = tuple(f.stat().st_size for f in recording_files(rec_dir))
            if now != sizes:
                sizes, steady_since = now, time.monotonic()
            time.sleep(0.2)
        assert recorder.poll() is None, "the recorder must keep running"
        recorder.send_signal(signal.SIGTERM)
        assert recorder.wait(timeout=20) == 0
        stderr = recorder.stderr.read() if recorder.stderr else ""
        full = [line for line in stderr.splitlines() if "the disk is full" in line]
        # once each time it filled: a slow host may reach the recorder's retry (60 s), where
        # it records again into a new file until the disk is full again
        again = [line for line in stderr.splitlines() if "recording again" in line]
        assert len(full) == len(again) + 1, stderr
        assert "Traceback" not in stderr
        paths = recording_files(rec_dir)
        assert len(paths) == len(full), paths
        for n, path in enumerate(paths):
            warnings: list[str] = []
            rec = RecordingFile(path, warnings.append)
            kept = sum(c.n for c in rec.chunks)
            assert kept >= 1 or n > 0, path
            assert len(warnings) <= 1
            rec.close()
    finally:
        unmount(str(mnt))


def test_bundle_writes_one_private_file_that_replays_and_never_overwrites(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    state = tmp_path / "state"
    recorder = start(tmp_path, "--interval", "0.3")
    procs.append(recorder)
    wait_samples(state / "recordings", 8)
    (state / "changes.jsonl").write_text('{"device": "sda", "setting": "read_ahead_kb"}\n')
    out = tmp_path / "incident.iprec"
    got = run(tmp_path, "bundle", "--last", "2s", "-o", str(out))
    assert got.returncode == 0, got.stderr
    assert os.stat(out).st_mode & 0o777 == 0o600
    timeline = open_timeline(out)
    span = timeline.span()
    assert span is not None and 1.0 <= span[1] - span[0] <= 2.0
    assert timeline.header["journal"] == [{"device": "sda", "setting": "read_ahead_kb"}]
    assert timeline.header["inventory"]
    again = run(tmp_path, "bundle", "--last", "2s", "-o", str(out))
    assert again.returncode == 1 and "not overwriting it without --force" in again.stderr
    (tmp_path / "victim").write_text("keep me")
    link = tmp_path / "link.iprec"
    link.symlink_to(tmp_path / "victim")
    refused = run(tmp_path, "bundle", "-o", str(link))
    assert refused.returncode == 1
    forced = run(tmp_path, "bundle", "-o", str(link), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "victim").read_text() == "keep me" and not link.is_symlink()
    snap = run(tmp_path, "snapshot", "--from", str(out), "-f", "json")
    assert snap.returncode == 0 and '"statistics"' in snap.stdout
    recorder.send_signal(signal.SIGTERM)
    assert recorder.wait(timeout=20) == 0
