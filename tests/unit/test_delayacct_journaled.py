"""`D` is a host setting (#22 item 4): ``kernel.task_delayacct`` is journaled with
``device: null``, ``scope: "host"`` and the boot id, undone by u/U, restored from a dead run in
the same boot, stale from another boot, and never refuses a device command.

The tuner switches the sysctl of a temporary ``/proc`` tree through an injected writer; a
"run that died" is a real child process killed with SIGKILL. The live sysctl is switched in
tests/tui/test_delayacct_na.py and tests/e2e/test_delayacct_restore.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from iotop_plus.devices.conflicts import TuningError
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from tests.unit.test_settings import make_tree

SYSCTL = "kernel.task_delayacct"


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    roots = make_tree(tmp_path / "tree")
    (roots.sys_block / "sda" / "dev").write_text("8:0\n")
    (roots.sys_block / "sda" / "diskseq").write_text("9\n")
    kernel = roots.proc / "sys" / "kernel"
    (kernel / "random").mkdir(parents=True)
    (kernel / "task_delayacct").write_text("0\n")
    (kernel / "random" / "boot_id").write_text(f"{uuid.uuid4()}\n")
    return roots


def delayacct(roots: Roots) -> str:
    return (roots.proc / "sys" / "kernel" / "task_delayacct").read_text().strip()


def boot(roots: Roots) -> str:
    return (roots.proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()


def tuner_of(roots: Roots, state: Path) -> Tuner:
    return Tuner(roots, Journal.in_dir(state), is_root=True, writer=write_tree_file)


def records(state: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from iotop_plus.devices.journal import Journal
    from iotop_plus.devices.tuner import Tuner, TuningError
    from iotop_plus.devices.writers import write_tree_file
    from iotop_plus.roots import Roots
    tree, state = sys.argv[1:3]
    roots = Roots(proc=Path(tree) / "proc", sys=Path(tree) / "sys")
    tuner = Tuner(roots, Journal.in_dir(Path(state)), is_root=True, writer=write_tree_file)
    tuner.switch_delayacct(True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def dead_run_switched_it_on(roots: Roots, state: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(roots.sys.parent), str(state)],
        cwd=Path(__file__).parents[2],
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL


def test_D_is_journaled_as_a_host_setting_with_the_boot_id(roots: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    tuner = tuner_of(roots, state)
    change = tuner.switch_delayacct(True)
    assert delayacct(roots) == "1"
    assert (change.scope, change.old, change.effective) == ("host", "0", "1")
    assert change.summary == f"host {SYSCTL}: 0 -> 1"
    intent, outcome = records(state)
    assert intent["record"] == "intent"  # before the write
    for line in (intent, outcome):
        assert line["device"] is None and line["queue_device"] is None
        assert line["scope"] == "host" and line["setting"] == SYSCTL
        assert line["boot_id"] == boot(roots)
    assert isinstance(outcome["boottime_s"], float)
    # It is no queue setting: a udev rule or script never sets it.
    assert tuner.net_settings() == {}


def test_u_and_U_undo_D(roots: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    tuner = tuner_of(roots, state)
    tuner.switch_delayacct(True)
    undo = tuner.undo()
    assert (undo.action, undo.scope, undo.effective) == ("undo", "host", "0")
    assert delayacct(roots) == "0"
    tuner.apply("sda", "read_ahead_kb", "64")
    tuner.switch_delayacct(True)
    assert len(tuner.revert_all()) == 2
    assert delayacct(roots) == "0"
    assert tuner.active == ()
    tuner.journal.close()
    assert Journal.in_dir(state).leftovers(roots) == []


def test_a_dead_runs_D_is_offered_and_restored_in_the_same_boot(
    roots: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    dead_run_switched_it_on(roots, state)
    assert delayacct(roots) == "1"
    tuner = tuner_of(roots, state)
    (left,) = tuner.journal.leftovers(roots)
    assert (left.scope, left.device, left.where, left.setting) == ("host", None, "host", SYSCTL)
    assert (left.original, left.left, left.identity) == ("0", "1", "same")
    change = tuner.restore_leftover(left)
    assert (change.action, change.effective) == ("restore", "0")
    assert delayacct(roots) == "0"
    assert records(state)[-1]["record"] == "closed"
    assert tuner.journal.leftovers(roots) == []


def test_a_D_left_from_another_boot_is_stale_and_never_written(
    roots: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    dead_run_switched_it_on(roots, state)
    # A reboot: a new boot id, and the kernel is back at its default.
    (roots.proc / "sys" / "kernel" / "random" / "boot_id").write_text(f"{uuid.uuid4()}\n")
    (roots.proc / "sys" / "kernel" / "task_delayacct").write_text("0\n")
    tuner = tuner_of(roots, state)
    (left,) = tuner.journal.leftovers(roots)
    assert left.stale
    assert left.identity == "stale: set in an earlier boot (the kernel reset it at boot)"
    with pytest.raises(TuningError, match="not restored"):
        tuner.restore_leftover(left)
    assert delayacct(roots) == "0"


def test_a_D_leftover_never_refuses_a_device_command(roots: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    dead_run_switched_it_on(roots, state)
    journal = Journal.in_dir(state)
    assert [x.scope for x in journal.leftovers(roots)] == ["host"]
    assert journal.leftover_refusal(roots, "sda") is None
    assert journal.leftovers_on(roots, "sda") == []


def test_the_last_switch_on_is_read_from_the_journal(roots: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = tuner_of(roots, state)
    assert first.delayacct_switched_on() is None  # nothing known: figures are shown
    change = first.switch_delayacct(True)
    assert first.delayacct_switched_on() == change.boottime
    first.keep("quit")
    first.journal.close()
    # A later run knows it from the journal.
    assert tuner_of(roots, state).delayacct_switched_on() == change.boottime
    # Switched off since: the time of the last switch on is no longer known.
    second = tuner_of(roots, state)
    second.switch_delayacct(False)
    assert second.delayacct_switched_on() is None
    second.keep("quit")
    assert tuner_of(roots, state).delayacct_switched_on() is None
    # Another boot: nothing is known of this one.
    third = tuner_of(roots, state)
    third.switch_delayacct(True)
    third.keep("quit")
    (roots.proc / "sys" / "kernel" / "random" / "boot_id").write_text(f"{uuid.uuid4()}\n")
    assert tuner_of(roots, state).delayacct_switched_on() is None
