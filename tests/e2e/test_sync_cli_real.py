"""``snapshot --sync``, ``record --sync`` and ``serve`` with the sync and jbd2 parts, on ext4 on
a loop device of the test's own while fio syncs a file there."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sync_real import Mounted, make_fs
from tests.support.cli import cli_argv, cli_env, run_cli, serve
from tests.support.part_tracer import require_bpftrace
from tests.support.wait import holds_within

pytestmark = [pytest.mark.slow, pytest.mark.root]


def require_part_probes() -> None:
    """The parts' probes run in the one tracer: they need root and bpftrace."""
    require_bpftrace()


@pytest.fixture
def ext4(make_loop: Callable[..., str], tmp_path: Path) -> Iterator[Mounted]:
    yield from make_fs(make_loop, tmp_path, "ext4")


def syncing(fio_bin: str, target: Path) -> subprocess.Popen[str]:
    """fio writing 8k and syncing each write, until the test kills it (a busy host can take
    many seconds to attach the tracer, so fio never stops on its own first). With fsync (not
    fdatasync) every sync commits the journal, overwrites too: the write changed the inode's
    mtime, which fdatasync leaves to later (once fio wraps around its 8 MB, fdatasync commits
    nothing)."""
    return subprocess.Popen(
        [fio_bin, "--name=wal", f"--filename={target}", "--rw=write", "--bs=8k", "--size=8m",
         "--fsync=1", "--time_based", "--runtime=600", "--output-format=json"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def stop(fio: subprocess.Popen[str]) -> None:
    """Stop fio and its job, a process of its own in a session of its own that SIGKILL of the
    main process leaves running: on SIGTERM fio ends its jobs and then exits."""
    fio.terminate()
    try:
        fio.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fio.kill()
        fio.communicate()


def disks(doc: dict[str, Any], dev: str) -> list[dict[str, Any]]:
    return [
        d
        for stat in doc["sysstat"]["hosts"][0]["statistics"]
        for d in stat["disk"]
        if d["disk_device"] == dev
    ]


def test_snapshot_sync_names_the_file_and_counts_commits(
    ext4: Mounted, fio_bin: str, tmp_path: Path
) -> None:
    require_part_probes()
    target = ext4.mnt / "wal.dat"
    fio = syncing(fio_bin, target)
    try:
        done = run_cli(
            "snapshot", "--sync", "-f", "json", "--interval", "2", "--count", "2", ext4.dev,
            state=tmp_path / "state", timeout=120,
        )  # fmt: skip
    finally:
        stop(fio)
    assert done.returncode == 0, done.stderr
    last = disks(json.loads(done.stdout), ext4.dev)[-1]
    sync = last["sync"]
    assert sync["count"] > 10, sync
    assert 0 < sync["p50_us"] <= sync["p99_us"] <= sync["max_us"]
    assert sync["by_file"][0]["path"] == str(target)
    assert sync["by_file"][0]["comm"] == "fio"
    journal = last["journal"]
    assert journal["commits_per_s"] > 0
    assert set(journal["logging_us"]) == {"avg", "max"}
    assert journal["running_ms"] is None or journal["running_ms"]["coarse"] is True


def test_record_sync_keeps_syncs_for_replay(ext4: Mounted, fio_bin: str, tmp_path: Path) -> None:
    require_part_probes()
    target = ext4.mnt / "wal.dat"
    rec = tmp_path / "rec"

    def replayed() -> list[int]:
        done = run_cli(
            "snapshot", "--from", str(rec), "--sync", "-f", "json", ext4.dev,
            state=tmp_path / "state", timeout=120,
        )  # fmt: skip
        if "no whole interval" in done.stderr:
            return []  # the recorder has not written two frames yet
        assert done.returncode == 0, done.stderr
        got = disks(json.loads(done.stdout), ext4.dev)
        return [d["sync"]["count"] for d in got if d.get("sync")]

    argv = cli_argv(
        "record", "--sync", "--interval", "1", "--dir", str(rec), state=tmp_path / "state"
    )  # fmt: skip
    fio = syncing(fio_bin, target)
    recorder = subprocess.Popen(
        argv, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        # Until the recording holds frames with fio's syncs.
        assert holds_within(lambda: rec.exists() and sum(replayed()) > 10, 120)
    finally:  # the recorder (and its tracer) stops however the wait ended
        recorder.terminate()
        _, err = recorder.communicate(timeout=30)
        stop(fio)
    assert recorder.returncode == 0, err
    seen = replayed()
    assert sum(seen) > 10, seen


def test_serve_exports_the_sync_histogram_and_commits(
    ext4: Mounted, fio_bin: str, tmp_path: Path
) -> None:
    require_part_probes()
    target = ext4.mnt / "wal.dat"
    fio = syncing(fio_bin, target)
    try:
        with serve("--sync", state=tmp_path / "state") as port:

            def scraped() -> str:
                url = f"http://127.0.0.1:{port}/metrics"
                with urllib.request.urlopen(url, timeout=10) as resp:
                    return str(resp.read().decode())

            def has_syncs() -> bool:
                text = scraped()
                pattern = (
                    rf'iotop_plus_disk_sync_duration_seconds_count\{{[^}}]*device="{ext4.dev}"'
                    r"[^}]*\} ([0-9.e+]+)"
                )
                found = re.search(pattern, text)
                return found is not None and float(found.group(1)) > 10

            assert holds_within(has_syncs, 60), scraped()[-3000:]
            text = scraped()
    finally:
        stop(fio)
    assert f'iotop_plus_disk_journal_commits_total{{device="{ext4.dev}"}}' in text
    assert re.search(
        rf'iotop_plus_disk_journal_phase_seconds_total\{{device="{ext4.dev}",phase="logging"\}}',
        text,
    )
