"""A FIFO where a recording or a state file is expected is one line, never a hang (#22 item 10).

Each command runs as the real console script with a timeout: before the fix, opening a FIFO
that has no writer waited forever.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.hostile_recordings import write_small_recording

REPO = Path(__file__).resolve().parents[2]
GOOD = "iotop-plus-000001-20231114-221330.rec"
FIFO = "iotop-plus-000002-20231114-231330.rec"


def iotop_plus(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, state=state, timeout=30, env={"TZ": "UTC"}, cwd=REPO)


def test_a_fifo_given_as_the_recording_is_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "incident.rec"
    os.mkfifo(fifo, 0o600)
    for args in (("snapshot", "--from", str(fifo)), ("replay", str(fifo))):
        done = iotop_plus(tmp_path / "state", *args)
        assert done.returncode == 1, done.stderr
        assert done.stderr == f"iotop-plus: error: {fifo}: not a regular file (a FIFO)\n"


def test_a_fifo_in_the_recording_directory_is_skipped_with_one_warning(tmp_path: Path) -> None:
    directory = tmp_path / "rec"
    directory.mkdir(mode=0o700)
    write_small_recording(directory / GOOD, 70)
    os.mkfifo(directory / FIFO, 0o600)
    for args in (
        ("snapshot", "--from", str(directory), "-f", "json"),
        ("snapshot", "--from", str(directory), "--overview"),
        ("bundle", "--dir", str(directory), "--last", "1h", "-o", str(tmp_path / "b.rec")),
    ):
        done = iotop_plus(tmp_path / "state", *args)
        assert done.returncode == 0, done.stderr
        named = [line for line in done.stderr.splitlines() if FIFO in line]
        assert len(named) == 1 and "not a regular file (a FIFO)" in named[0], done.stderr
    only = tmp_path / "only-fifo"
    only.mkdir(mode=0o700)
    os.mkfifo(only / FIFO, 0o600)
    done = iotop_plus(tmp_path / "state", "replay", str(only))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "no readable recordings" in done.stderr.splitlines()[-1]


def test_restore_with_a_fifo_for_a_runs_lock_does_not_hang(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "runs").mkdir(parents=True, mode=0o700)
    state.chmod(0o700)
    intent = {
        "record": "intent", "action": "set", "run": "20231114T221330-1-dead", "sequence": 1,
        "device": "loop97", "queue_device": "loop97", "setting": "read_ahead_kb",
        "old": "128", "new": "4096",
    }  # fmt: skip
    (state / "changes.jsonl").write_text(json.dumps(intent) + "\n")
    (state / "changes.jsonl").chmod(0o600)
    os.mkfifo(state / "runs" / "20231114T221330-1-dead.lock", 0o600)
    done = iotop_plus(state, "restore", "--dry-run")
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr


def test_the_recorder_says_once_that_a_journal_is_a_fifo(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "changes.jsonl", 0o600)
    done = iotop_plus(state, "record", "--interval", "0.1", "--count", "5")
    assert done.returncode == 0, done.stderr
    named = [line for line in done.stderr.splitlines() if "changes.jsonl" in line]
    assert len(named) == 1 and "not a regular file" in named[0], done.stderr
    done = iotop_plus(state, "bundle", "--last", "1h", "-o", str(tmp_path / "b.rec"))
    assert done.returncode == 0, done.stderr
    named = [line for line in done.stderr.splitlines() if "changes.jsonl" in line]
    assert len(named) == 1 and "not a regular file" in named[0], done.stderr
