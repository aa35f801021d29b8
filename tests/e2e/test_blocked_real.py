"""Blocked tasks for real: writers on our own loop device's ext4, frozen with ``fsfreeze``.

Writers that opened their files before ``fsfreeze -f`` are listed as blocked on that mount
within two frames (1 s apart on the frames' clock, the scan's worst case: the last full scan
just before the freeze), and gone within one frame of ``fsfreeze -u``. As uid 65534 the part
still counts them and says what it cannot see. The freeze touches only the test's own loop
filesystem and is always undone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.record.format import FormatError
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.recorder import recording_files
from iotop_plus.roots import Roots
from iotop_plus.sampling.blocked.model import BlockedTasks
from iotop_plus.sampling.blocked.part import BlockedPart
from iotop_plus.sampling.blocked.scan import BlockedReader
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.topology.inventory import read_inventory
from tests.support.cli import cli_argv, cli_env, run_cli, serve
from tests.support.loopdev import loop_device
from tests.support.mounts import unmount
from tests.support.nobody import nobody_env, nobody_python
from tests.support.wait import holds_within

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount, fsfreeze)")

WRITER = (
    "import sys\n"
    "f = open(sys.argv[1], 'wb', buffering=0)\n"
    "print('open', flush=True)\n"
    "sys.stdin.readline()\n"
    "while True:\n"
    "    f.write(b'x' * 4096)\n"
    "    f.seek(0)\n"
)


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat[stat.rindex(")") + 2]


@contextmanager
def frozen_writers(tmp_path: Path, count: int = 2) -> Iterator[tuple[Path, list[int], str]]:
    """Writers on our own ext4, its mount point and device: freeze with :func:`freeze`."""
    with loop_device(tmp_path, size_mb=64) as dev:
        made = subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], capture_output=True)
        assert made.returncode == 0, made.stderr
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True)
        writers: list[subprocess.Popen[bytes]] = []
        try:
            for i in range(count):
                writer = subprocess.Popen(
                    [sys.executable, "-c", WRITER, str(mnt / f"table-{i}.db")],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
                writers.append(writer)
                assert writer.stdout is not None and writer.stdout.readline() == b"open\n"
            yield mnt, [w.pid for w in writers], dev
        finally:
            subprocess.run(["fsfreeze", "-u", str(mnt)], capture_output=True)
            for writer in writers:
                writer.kill()
                writer.wait()
            unmount(mnt)


@contextmanager
def freeze(mnt: Path, pids: list[int], writers_go: bool = True) -> Iterator[None]:
    """``fsfreeze -f`` our mount, let the writers write, wait until each is in D; always thaw."""
    subprocess.run(["fsfreeze", "-f", str(mnt)], check=True)
    try:
        for pid in pids:
            with open(f"/proc/{pid}/fd/0", "w") as stdin:
                stdin.write("go\n")
        assert holds_within(lambda: all(_state(p) == "D" for p in pids), 30.0), "writers in D"
        yield
    finally:
        subprocess.run(["fsfreeze", "-u", str(mnt)], check=True)


class Frames:
    """The part's reader on the live host, frames 1 s apart on the frames' clock."""

    def __init__(self) -> None:
        self.roots = Roots()
        self.sampler = Sampler(self.roots)
        self.reader = BlockedReader(self.roots)
        self.start = self.sampler.sample().monotonic
        self.seq = 0

    def next(self) -> BlockedTasks:
        from dataclasses import replace

        sample = replace(self.sampler.sample(), monotonic=self.start + self.seq)
        self.seq += 1
        ctx = ReadContext(
            self.roots, sample, None, read_inventory(self.roots), frozenset({"blocked"})
        )
        value, _ = self.reader.read(ctx)
        return value


def _on(value: BlockedTasks, mnt: Path) -> list[dict[str, Any]]:
    return [g.as_json() for g in value.groups if g.mount == str(mnt) and g.reason == "frozen"]


def test_frozen_writers_are_listed_within_two_frames_and_gone_one_frame_after_the_thaw(
    tmp_path: Path,
) -> None:
    with frozen_writers(tmp_path) as (mnt, pids, dev):
        frames = Frames()
        try:
            assert _on(frames.next(), mnt) == []  # the full scan just before the freeze
            with freeze(mnt, pids):
                seen = [_on(frames.next(), mnt) for _ in range(2)]
                groups = seen[-1]
                assert groups, f"not listed within two frames: {seen}"
                assert sorted(p for g in groups for p in g["pids"]) == sorted(pids)
                for g in groups:
                    assert g["syscall"] == "write" and g["wait"] == "percpu_rwsem_wait"
                    assert g["device"] == dev and str(g["file"]).startswith(f"{mnt}/table-")
                still = _on(frames.next(), mnt)
                assert still and all(g["oldest_s"] >= 1.0 for g in still)
            assert holds_within(lambda: all(_state(p) != "D" for p in pids), 30.0)
            assert _on(frames.next(), mnt) == [], "gone within one frame of the thaw"
        finally:
            frames.reader.close()


NOBODY_READER = """
import json, sys
from iotop_plus.record.format import FormatError
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.recorder import recording_files
from iotop_plus.roots import Roots
from iotop_plus.sampling.blocked.part import BlockedPart
from iotop_plus.sampling.blocked.scan import BlockedReader
from iotop_plus.sampling.topology.inventory import read_inventory
from iotop_plus.sampling.frame.part import ReadContext
from iotop_plus.sampling.disks.sampler import Sampler
roots = Roots()
ctx = ReadContext(roots, Sampler(roots).sample(), None, read_inventory(roots), frozenset())
value, _ = BlockedReader(roots).read(ctx)
print(json.dumps({**BlockedPart().entry_json(value), "notes": list(value.notes()),
                  "root": value.root}))
"""


def test_as_nobody_the_part_still_counts_and_says_what_it_cannot_see(tmp_path: Path) -> None:
    python = nobody_python()
    with frozen_writers(tmp_path) as (mnt, pids, _), freeze(mnt, pids):
        run = subprocess.run(
            [*python, "-c", NOBODY_READER],
            capture_output=True,
            text=True,
            env=nobody_env("/usr/bin:/bin"),
            cwd="/",
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["root"] is False
    assert any("not root" in line and "wait is hidden" in line for line in doc["notes"])
    theirs = [g for g in doc["blocked"] if set(g["pids"]) & set(pids)]
    assert sum(g["count"] for g in theirs) >= len(pids)
    for g in theirs:
        assert g["wait"] is None and g["syscall"] is None and g["file"] is None
        assert "wait" in g["refused"] and g["reason"] == "unknown"


def test_the_part_json_of_a_live_frame_round_trips(tmp_path: Path) -> None:
    with frozen_writers(tmp_path, count=1) as (mnt, pids, _), freeze(mnt, pids):
        frames = Frames()
        value = frames.next()
        frames.reader.close()
    part = BlockedPart()
    assert part.from_json(json.loads(json.dumps(part.to_json(value)))) == value
    assert _on(value, mnt)


def test_snapshot_serve_and_a_recording_show_the_frozen_writers(tmp_path: Path) -> None:
    with frozen_writers(tmp_path) as (mnt, pids, dev), freeze(mnt, pids):
        run = run_cli("snapshot", "--blocked", "-f", "json", "-c", "1", state=tmp_path / "s")
        assert run.returncode == 0, run.stderr
        entry = json.loads(run.stdout)["sysstat"]["hosts"][0]["statistics"][-1]
        mine = [g for g in entry["blocked"] if g["mount"] == str(mnt)]
        assert sorted(p for g in mine for p in g["pids"]) == sorted(pids)
        assert {g["reason"] for g in mine} == {"frozen"}
        with serve(state=tmp_path / "serve") as port:
            line = f'iotop_plus_blocked_tasks{{device="{dev}",reason="frozen"}} {len(pids)}.0'

            def exported() -> bool:
                url = f"http://127.0.0.1:{port}/metrics"
                with urllib.request.urlopen(url, timeout=10) as page:
                    return line in page.read().decode()

            assert holds_within(exported, 30.0), line
        rec = tmp_path / "rec"
        argv = cli_argv("record", "--blocked", "-i", "1", "--dir", str(rec), state=tmp_path / "r")
        recorder = subprocess.Popen(argv, env=cli_env(), stderr=subprocess.PIPE, text=True)
        try:
            assert holds_within(lambda: _samples(rec) >= 3, 60.0), "three samples recorded"
        finally:
            recorder.terminate()
            assert recorder.wait(30) == 0, recorder.stderr.read() if recorder.stderr else ""
    again = run_cli("snapshot", "--from", str(rec), "-f", "json", state=tmp_path / "s")
    assert again.returncode == 0, again.stderr
    entries = json.loads(again.stdout)["sysstat"]["hosts"][0]["statistics"]
    kept = [g for e in entries for g in e.get("blocked", []) if g["mount"] == str(mnt)]
    assert kept and {g["reason"] for g in kept} == {"frozen"}, entries


def _samples(directory: Path) -> int:
    """Samples in the newest recording (0 before it has a header)."""
    paths = recording_files(directory)
    if not paths:
        return 0
    try:
        rec = RecordingFile(paths[-1], follow=True)
    except FormatError:
        return 0
    try:
        return sum(c.n for c in rec.chunks)
    finally:
        rec.close()
