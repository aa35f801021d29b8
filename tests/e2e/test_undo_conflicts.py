"""Undo and restore put back only what they changed, on real loop devices: two tuners on one
state directory, a value changed by hand, and a crashed run's leftover changed since.

Each test makes its own loop device and puts its queue settings back at the end. The
console-script test runs ``python -m iotop_plus restore`` as a user would, with its own
``--state-dir``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iotop_plus.devices.conflicts import FORCE, ConflictError
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from tests.support.cli import REPO, run_cli
from tests.support.queue_guard import restored_queue

pytestmark = pytest.mark.root

LIVE = Roots()


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    name = make_loop(32)
    with restored_queue(name):
        yield name


def read_ahead(device: str) -> str:
    return (Path("/sys/block") / device / "queue" / "read_ahead_kb").read_text().strip()


def by_hand(device: str, value: str) -> None:
    """What a person does: write sysfs directly, outside any journal."""
    (Path("/sys/block") / device / "queue" / "read_ahead_kb").write_text(value + "\n")


def conflicts(state: Path) -> list[dict[str, object]]:
    lines = (state / "changes.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["record"] == "conflict"]


def test_two_tuners_on_one_state_dir_never_end_at_a_value_neither_chose(
    loop: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    a = Tuner(LIVE, Journal.in_dir(state))
    b = Tuner(LIVE, Journal.in_dir(state))
    original = read_ahead(loop)
    a.apply(loop, "read_ahead_kb", "64")
    b.apply(loop, "read_ahead_kb", "2048")

    with pytest.raises(ConflictError) as refused:
        a.undo()  # headless: refuses, writes nothing
    assert read_ahead(loop) == "2048"
    assert str(refused.value).startswith(
        f"{loop} read_ahead_kb is 2048 now (set by run {b.journal.run_id}); this run set 64, "
        f"the original was {original}: left at 2048; "
    )
    assert "\n" not in str(refused.value)
    (record,) = conflicts(state)
    assert (record["run"], record["choice"], record["changed_by"], record["by"]) == (
        a.journal.run_id,
        "refused",
        b.journal.run_id,
        a.journal.run_id,
    )
    assert (record["now"], record["wrote"], record["original"]) == ("2048", "64", original)
    assert len(a.active) == 1  # still open: a leftover once A has ended

    # Revert-all refuses the same way.
    with pytest.raises(ConflictError):
        a.revert_all()
    assert read_ahead(loop) == "2048"

    # B's undo finds what it wrote and puts its own original back: A's 64.
    b.undo()
    assert read_ahead(loop) == "64"
    # Now the setting holds what A wrote again, so A's undo goes through.
    a.undo()
    assert read_ahead(loop) == original
    for tuner in (a, b):
        tuner.journal.close()
    assert Journal.in_dir(state).leftovers(LIVE) == []


def test_a_value_changed_by_hand_is_refused_headless_and_force_puts_it_back(
    loop: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    tuner = Tuner(LIVE, Journal.in_dir(state))
    original = read_ahead(loop)
    tuner.apply(loop, "read_ahead_kb", "64")
    by_hand(loop, "512")

    with pytest.raises(ConflictError, match="changed by hand or by another tool") as refused:
        tuner.undo()
    assert read_ahead(loop) == "512"
    assert f"`iotop-plus --state-dir {state} restore --force`" in str(refused.value)

    undo = tuner.undo(on_conflict=FORCE)
    assert (undo.effective, read_ahead(loop)) == (original, original)
    assert [(r["choice"], r["changed_by"]) for r in conflicts(state)] == [
        ("refused", None),
        ("put_back", None),
    ]
    tuner.journal.close()
    assert Journal.in_dir(state).leftovers(LIVE) == []


#: A run that applies one value, then dies with SIGKILL before undoing or keeping it.
CRASHING_RUN = """
import os, signal, sys
from pathlib import Path
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
Tuner(Roots(), Journal.in_dir(Path(sys.argv[1]))).apply(sys.argv[2], "read_ahead_kb", "64")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_restore_refuses_a_crashed_runs_setting_changed_by_hand_unless_forced(
    loop: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    original = read_ahead(loop)
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_RUN, str(state), loop],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=60,
    )
    assert crashed.returncode == -9, crashed.stderr
    assert read_ahead(loop) == "64"
    by_hand(loop, "512")

    refusal = (
        f"{loop} read_ahead_kb is 512 now (no journaled run set it: changed by hand or by "
        f"another tool); a run that died set 64, the original was {original}: left at 512; "
        f"--force puts {original} back"
    )
    dry = run_cli("restore", "--dry-run", state=state)
    assert (dry.returncode, dry.stdout) == (
        1,
        f"{loop} read_ahead_kb: 512 -> {original}, would refuse: {refusal}\n",
    )
    refused = run_cli("restore", state=state)
    assert (refused.returncode, refused.stdout, refused.stderr) == (
        1,
        f"{loop} read_ahead_kb: 512 -> {original}, refused: {refusal}\n",
        "",
    )
    assert read_ahead(loop) == "512"
    assert [r["choice"] for r in conflicts(state)] == ["refused"]

    forced = run_cli("restore", "--force", state=state)
    assert (forced.returncode, forced.stdout) == (
        0,
        f"{loop} read_ahead_kb: 512 -> {original}, restored\n",
    )
    assert read_ahead(loop) == original
    assert [r["choice"] for r in conflicts(state)] == ["refused", "put_back"]
    again = run_cli("restore", state=state)
    assert (again.returncode, again.stdout) == (0, "")
    assert "nothing to restore" in again.stderr

    both = run_cli("restore", "--keep", "--force", state=state)
    assert both.returncode == 2 and both.stderr.count("\n") == 1
