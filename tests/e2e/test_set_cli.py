"""``iotop-plus set`` as a user runs it: the real console module in a subprocess, on a loop
device the test made, as root and as an unprivileged user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.queue_guard import queue_values, restored_queue

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    """A fresh loop device whose queue settings are restored after the test."""
    name = make_loop(32)
    with restored_queue(name):
        yield name


def iotop_plus(
    *args: str, state: Path, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    # #11: the journal lives in the state dir given by --state-dir (never /var/lib here).
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [
            *prefix,
            sys.executable,
            "-m",
            "iotop_plus",
            "--state-dir",
            str(state / "iotop-plus"),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=60,
    )


def test_set_prints_old_to_effective_and_journals(loop: str, tmp_path: Path) -> None:
    before = queue_values(loop)
    run = iotop_plus("set", loop, "read_ahead_kb=7", "scheduler=mq-deadline", state=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    # The scheduler goes first; its reset of nr_requests is shown.
    assert lines[0] == (
        f"{loop} scheduler: {before['scheduler']} -> mq-deadline; "
        f"also nr_requests: {before['nr_requests']} -> 256"
    )
    assert lines[1] == (
        f"{loop} read_ahead_kb: {before['read_ahead_kb']} -> 4 "
        "(asked 7: rounded down to whole 4 KiB pages)"
    )
    assert queue_values(loop)["read_ahead_kb"] == "4"
    journal = tmp_path / "iotop-plus" / "changes.jsonl"
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    entries = [e for e in records if e["record"] == "change"]
    assert [(e["setting"], e["effective"]) for e in entries] == [
        ("scheduler", "mq-deadline"),
        ("read_ahead_kb", "4"),
    ]
    # #11: the intent comes before each write; a headless set is closed as kept.
    assert [e["record"] for e in records] == [
        "intent",
        "change",
        "intent",
        "change",
        "keep",
        "keep",
    ]
    assert {e["reason"] for e in records if e["record"] == "keep"} == {"set"}


def test_json_output(loop: str, tmp_path: Path) -> None:
    run = iotop_plus("set", loop, "max_sectors_kb=999999", "--format", "json", state=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    (change,) = doc["changes"]
    hw = Path(f"/sys/block/{loop}/queue/max_hw_sectors_kb").read_text().strip()
    assert change["effective"] == hw
    assert change["note"] == f"clamped to max_hw_sectors_kb ({hw})"


def test_a_bad_value_is_one_line_exit_2_and_nothing_changes(loop: str, tmp_path: Path) -> None:
    before = queue_values(loop)
    run = iotop_plus("set", loop, "read_ahead_kb=16", "nomerges=1.5", state=tmp_path)
    assert run.returncode == 2
    assert run.stderr == (
        f"iotop-plus: error: {loop} nomerges: '1.5' is not a whole number (valid: 0, 1 or 2)\n"
    )
    assert queue_values(loop) == before
    assert not (tmp_path / "iotop-plus" / "changes.jsonl").exists()


def test_a_kernel_refusal_rolls_back_the_settings_already_written(
    loop: str, tmp_path: Path
) -> None:
    before = queue_values(loop)
    run = iotop_plus(
        "set", loop, "read_ahead_kb=16", "scheduler=bfq", "nr_requests=99999", state=tmp_path
    )
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1
    assert "value not accepted by this device (valid: 4 to 2048" in run.stderr
    assert run.stderr.rstrip().endswith("nothing was changed")
    assert queue_values(loop) == before
    entries = (tmp_path / "iotop-plus" / "changes.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in entries]
    actions = [x["action"] for x in records if x["record"] == "change"]
    assert actions.count("rollback") >= 2
    # #11: the refused write is journaled as failed, and nothing is left over.
    assert [x["record"] for x in records].count("failed") == 1


def test_dry_run_writes_nothing(loop: str, tmp_path: Path) -> None:
    before = queue_values(loop)
    run = iotop_plus("set", loop, "read_ahead_kb=16", "--dry-run", state=tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"read_ahead_kb: {before['read_ahead_kb']} -> 16" in run.stdout
    assert "dry run: nothing written" in run.stdout
    assert queue_values(loop) == before
    assert not (tmp_path / "iotop-plus").exists()


def test_udev_rule_file_is_written_once(loop: str, tmp_path: Path) -> None:
    rules = tmp_path / "61-iotop-plus.rules"
    run = iotop_plus("set", loop, "read_ahead_kb=16", "--udev-rule", str(rules), state=tmp_path)
    assert run.returncode == 0, run.stderr
    text = rules.read_text()
    assert f'KERNEL=="{loop}", ATTR{{queue/read_ahead_kb}}="16"' in text
    assert "matches the kernel name" in text
    again = iotop_plus("set", loop, "read_ahead_kb=32", "--udev-rule", str(rules), state=tmp_path)
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert queue_values(loop)["read_ahead_kb"] == "16"


def test_unknown_device_and_setting_are_usage_errors(tmp_path: Path) -> None:
    run = iotop_plus("set", "nosuchdisk9", "read_ahead_kb=16", state=tmp_path)
    assert (run.returncode, run.stderr) == (2, "iotop-plus: error: unknown device 'nosuchdisk9'\n")
    run = iotop_plus("set", "loop0", "readahead=16", state=tmp_path)
    assert run.returncode == 2
    assert "unknown setting 'readahead'" in run.stderr


def _nobody_can_run_python() -> str | None:
    probe = subprocess.run(
        [*NOBODY, sys.executable, "-c", "import iotop_plus"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd="/",
    )
    if probe.returncode != 0:
        return f"uid 65534 cannot run {sys.executable}: {probe.stderr.strip()[-200:]}"
    return None


def test_as_nobody_settings_are_read_only_with_a_clear_reason(loop: str, tmp_path: Path) -> None:
    reason = _nobody_can_run_python()
    if reason:
        pytest.skip(reason)
    before = queue_values(loop)
    state = tmp_path / "nobody-state"  # not writable by nobody: the journal must not matter
    run = iotop_plus("set", loop, "read_ahead_kb=16", state=state, prefix=tuple(NOBODY))
    assert run.returncode == 1
    assert run.stderr == (
        f"iotop-plus: error: {loop} read_ahead_kb: "
        "needs root: queue settings are read-only for other users\n"
    )
    dry = iotop_plus("set", loop, "read_ahead_kb=16", "-n", state=state, prefix=tuple(NOBODY))
    assert dry.returncode == 1
    assert "needs root" in dry.stderr and "Traceback" not in dry.stderr
    assert queue_values(loop) == before

    code = (
        "from iotop_plus.devices.settings import read_settings\n"
        "from iotop_plus.roots import Roots\n"
        f"for v in read_settings(Roots(), {loop!r}):\n"
        "    print(v.setting.name, v.value, v.writable, v.reason, sep='|')\n"
    )
    read = subprocess.run(
        [*NOBODY, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd="/",
    )
    assert read.returncode == 0, read.stderr
    rows = [line.split("|") for line in read.stdout.splitlines()]
    assert {r[0] for r in rows} >= {"read_ahead_kb", "scheduler", "nr_requests"}
    for name, value, writable, why in rows:
        assert value == before[name]
        assert writable == "False"
        assert why == "read-only: changing queue settings needs root"


def test_dry_run_shows_the_value_the_kernel_will_keep(loop: str, tmp_path: Path) -> None:
    """read_ahead_kb=7 is kept as 4 (whole 4 KiB pages): the dry run said 'would write 7'."""
    before = queue_values(loop)
    run = iotop_plus("set", loop, "read_ahead_kb=7", "--dry-run", state=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"{loop} read_ahead_kb: {before['read_ahead_kb']} -> 7 "
        "(kernel keeps 4: rounded down to whole 4 KiB pages)",
        "dry run: nothing written",
    ]
    assert queue_values(loop) == before


def test_dry_run_shows_the_side_effects_of_a_scheduler_change(loop: str, tmp_path: Path) -> None:
    """Switching the scheduler resets nr_requests; a dry run must say so, as set does."""
    before = queue_values(loop)
    assert before["scheduler"] == "none"
    run = iotop_plus("set", loop, "read_ahead_kb=16", "scheduler=mq-deadline", "-n", state=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"{loop} scheduler: none -> mq-deadline",
        f"  side effect: nr_requests will be reset (now {before['nr_requests']})",
        f"{loop} read_ahead_kb: {before['read_ahead_kb']} -> 16",
        "dry run: nothing written",
    ]
    doc = json.loads(
        iotop_plus(
            "set", loop, "scheduler=mq-deadline", "-n", "--format", "json", state=tmp_path
        ).stdout
    )
    (change,) = doc["changes"]
    assert change["side_effects"] == [{"setting": "nr_requests", "now": before["nr_requests"]}]
    assert doc["planned"] == {"scheduler": "mq-deadline"}
    # Setting nr_requests too: it is written after the reset, so nothing is lost.
    both = iotop_plus("set", loop, "scheduler=mq-deadline", "nr_requests=32", "-n", state=tmp_path)
    assert "side effect" not in both.stdout
    assert queue_values(loop) == before
