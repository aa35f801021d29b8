"""The state directory, the journal and leftovers (#11), on temporary trees.

Runs that "die" are real child processes killed with SIGKILL: their run lock goes with them.
Attacks by a second user run as nobody through setpriv.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from iotop_plus.devices.conflicts import TuningError
from iotop_plus.devices.delayacct import DelayAcctError, can_switch, set_delayacct
from iotop_plus.devices.journal import Journal, JournalError
from iotop_plus.devices.settings import (
    SettingError,
    predict_effective,
    read_setting,
    validate_value,
    write_setting,
)
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import NotLiveError, write_live_file, write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.state import StateDir, StateError
from tests.unit.test_settings import make_tree

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
ROOT = os.geteuid() == 0


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    roots = make_tree(tmp_path / "tree")
    (roots.sys_block / "sda" / "dev").write_text("8:0\n")
    (roots.sys_block / "sda" / "diskseq").write_text("9\n")
    return roots


def sysfs(roots: Roots, name: str) -> str:
    return (roots.sys_block / "sda" / "queue" / name).read_text().strip()


def tree_tuner(roots: Roots, state: Path) -> Tuner:
    return Tuner(roots, Journal.in_dir(state), is_root=True, writer=write_tree_file)


def records(state: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]


# --- writes only to the live trees -------------------------------------------------------------


def test_a_captured_tree_is_never_written_without_an_injected_writer(
    roots: Roots, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = roots.sys_block / "sda" / "queue" / "read_ahead_kb"
    link.unlink()
    link.symlink_to(victim)
    tuner = Tuner(roots, Journal.in_dir(tmp_path / "state"), is_root=True)
    with pytest.raises(SettingError, match="changes go only to the live /sys") as exc:
        tuner.apply("sda", "read_ahead_kb", "64")
    assert "\n" not in str(exc.value)
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "state" / "changes.jsonl").exists()


def test_the_tree_writer_never_follows_a_symlink(roots: Roots, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = roots.sys_block / "sda" / "queue" / "read_ahead_kb"
    link.unlink()
    link.symlink_to(victim)
    with pytest.raises(SettingError, match="symbolic link"):
        write_setting(roots, "sda", "read_ahead_kb", "64", is_root=True, writer=write_tree_file)
    assert victim.read_text() == "precious\n"


def test_the_live_writer_refuses_symlinks_and_files_outside_sysfs(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    with pytest.raises(NotLiveError):
        write_live_file(victim, "1")
    link = tmp_path / "link"
    link.symlink_to(victim)
    # A path under the live root that is a symlink: /sys/block/NAME is one (to devices/).
    block = next(Path("/sys/block").iterdir(), None)
    if block is not None:
        with pytest.raises(OSError) as exc:
            write_live_file(block, "1")
        assert exc.value.errno in (errno.ELOOP, errno.EISDIR, errno.EXDEV)
    with pytest.raises(NotLiveError):
        write_live_file(Path("/sys/../") / victim.relative_to("/"), "1")
    assert victim.read_text() == "precious\n"


@pytest.mark.skipif(not ROOT, reason="the attack needs root to write /proc files")
def test_delay_accounting_is_never_switched_through_a_captured_tree(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    kernel = tmp_path / "proc" / "sys" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "task_delayacct").symlink_to(victim)
    roots = Roots(proc=tmp_path / "proc", sys=tmp_path / "sys")
    assert can_switch(roots) is not None
    assert "live /proc" in (can_switch(roots) or "")
    with pytest.raises(DelayAcctError, match="live /proc"):
        set_delayacct(roots, True)
    assert victim.read_text() == "precious\n"


# --- values ------------------------------------------------------------------------------------


def test_a_5000_digit_value_is_one_clear_line(roots: Roots) -> None:
    value = read_setting(roots, "sda", "read_ahead_kb", is_root=True)
    with pytest.raises(SettingError, match="5000-digit number is out of range") as exc:
        validate_value(roots, value, "9" * 5000)
    assert "\n" not in str(exc.value)
    # Leading zeros do not count.
    assert validate_value(roots, value, "0" * 5000 + "16") == "16"


def test_the_effective_value_is_predicted_with_the_kernels_rounding(roots: Roots) -> None:
    ra = read_setting(roots, "sda", "read_ahead_kb", is_root=True)
    assert predict_effective(roots, ra, "1") == predict_effective(roots, ra, "2") == "0"
    assert predict_effective(roots, ra, "7") == "4"
    nr = read_setting(roots, "sda", "nr_requests", is_root=True)
    assert predict_effective(roots, nr, "2") == "4"
    ms = read_setting(roots, "sda", "max_sectors_kb", is_root=True)
    assert predict_effective(roots, ms, "99999") == "1280"
    wbt = read_setting(roots, "sda", "wbt_lat_usec", is_root=True)
    assert predict_effective(roots, wbt, "-1") is None


# --- the state directory -----------------------------------------------------------------------


def test_the_state_dir_and_journal_are_0700_and_0600_and_runs_are_told_apart(
    roots: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "a" / "iotop-plus"
    first = tree_tuner(roots, state)
    first.apply("sda", "read_ahead_kb", "16")
    first.keep("set")
    second = tree_tuner(roots, state)
    second.apply("sda", "read_ahead_kb", "32")
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "changes.jsonl").stat().st_mode) == 0o600
    lines = records(state)
    # Both runs start at sequence 1: the run id tells them apart.
    assert {(x["run"], x["sequence"]) for x in lines} == {
        (first.journal.run_id, 1),
        (second.journal.run_id, 1),
    }
    assert first.journal.run_id != second.journal.run_id
    assert lines[2] == {"record": "keep", **{k: lines[2][k] for k in lines[2] if k != "record"}}
    assert lines[2]["reason"] == "set"


def test_a_cut_last_line_does_not_swallow_the_next_record(roots: Roots, tmp_path: Path) -> None:
    state = tmp_path / "iotop-plus"
    state.mkdir(mode=0o700)
    (state / "changes.jsonl").write_text('{"record": "intent", "run": "x", "seq')
    os.chmod(state / "changes.jsonl", 0o600)
    tuner = tree_tuner(roots, state)
    tuner.apply("sda", "read_ahead_kb", "16")
    lines = (state / "changes.jsonl").read_text().splitlines()
    assert lines[0] == '{"record": "intent", "run": "x", "seq'
    assert [json.loads(x)["record"] for x in lines[1:]] == ["intent", "change"]


def test_a_symlinked_state_dir_or_journal_is_refused(roots: Roots, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "linked").symlink_to(real)
    tuner = tree_tuner(roots, tmp_path / "linked")
    with pytest.raises(SettingError, match="is a symbolic link"):
        tuner.apply("sda", "read_ahead_kb", "16")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "changes.jsonl").symlink_to(victim)
    tuner = tree_tuner(roots, state)
    with pytest.raises(SettingError, match=r"changes.jsonl is a symbolic link"):
        tuner.apply("sda", "read_ahead_kb", "16")
    assert victim.read_text() == "precious\n"
    assert sysfs(roots, "read_ahead_kb") == "128"


def test_a_group_writable_state_dir_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o770)
    with pytest.raises(StateError, match="writable by group or others"):
        StateDir(state).fd()


@pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_a_state_dir_made_by_another_user_is_refused(roots: Roots, tmp_path: Path) -> None:
    # nobody prepares a state dir with the journal pointing at a file of root's choosing.
    play = Path(tempfile.mkdtemp(prefix="iotop-plus-test-"))
    try:
        os.chmod(play, 0o777)
        victim = tmp_path / "victim"
        victim.write_text("precious\n")
        state = play / "iotop-plus"
        subprocess.run(
            [*NOBODY, "sh", "-c", f"mkdir -m 700 {state} && ln -s {victim} {state}/changes.jsonl"],
            check=True,
        )
        tuner = tree_tuner(roots, state)
        with pytest.raises(SettingError, match="owned by uid 65534"):
            tuner.apply("sda", "read_ahead_kb", "16")
        assert victim.read_text() == "precious\n"
        assert sysfs(roots, "read_ahead_kb") == "128"
    finally:
        shutil.rmtree(play)


# --- leftovers ---------------------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from iotop_plus.devices.journal import Journal
    from iotop_plus.devices.tuner import Tuner
    from iotop_plus.devices.writers import write_tree_file
    from iotop_plus.roots import Roots
    tree, state, value, mode = sys.argv[1:5]
    roots = Roots(proc=Path(tree) / "proc", sys=Path(tree) / "sys")
    tuner = Tuner(roots, Journal.in_dir(Path(state)), is_root=True, writer=write_tree_file)
    tuner.apply("sda", "read_ahead_kb", value)
    tuner.apply("sda", "read_ahead_kb", str(int(value) * 2))
    print("applied", flush=True)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()
    """
)


def child(roots: Roots, state: Path, value: str, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(roots.sys.parent), str(state), value, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )


def test_a_killed_runs_changes_are_leftovers_a_live_runs_are_not(
    roots: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    alive = child(roots, state, "16", "wait")
    assert alive.stdout is not None and alive.stdout.readline() == "applied\n"
    try:
        assert Journal.in_dir(state).leftovers(roots) == []
    finally:
        alive.kill()
        alive.wait()
    killed = child(roots, state, "64", "kill")
    assert killed.wait() == -signal.SIGKILL
    # Both runs are dead now: one leftover per device setting, back to the first original.
    journal = Journal.in_dir(state)
    lefts = journal.leftovers(roots)
    assert [(x.setting, x.original, x.left, x.identity) for x in lefts] == [
        ("read_ahead_kb", "128", "128", "same")
    ]
    assert len(lefts[0].changes) == 4
    refusal = journal.leftover_refusal(roots, "sda1")
    assert refusal == (
        "sda read_ahead_kb is 128, left by a run that ended without undoing or keeping it "
        f"(original 128); first run `iotop-plus --state-dir {state} restore` (puts the "
        f"originals back) or `iotop-plus --state-dir {state} restore --keep` (keeps the values)"
    )


def test_restore_puts_the_original_back_and_closes_the_leftover(
    roots: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    assert child(roots, state, "16", "kill").wait() == -signal.SIGKILL
    assert sysfs(roots, "read_ahead_kb") == "32"
    tuner = tree_tuner(roots, state)
    (left,) = tuner.journal.leftovers(roots)
    assert (left.original, left.left) == ("128", "32")
    change = tuner.restore_leftover(left)
    assert (change.action, change.effective) == ("restore", "128")
    assert sysfs(roots, "read_ahead_kb") == "128"
    assert tuner.journal.leftovers(roots) == []
    assert records(state)[-1]["record"] == "closed"


def test_a_leftover_on_a_replaced_device_is_stale_and_never_written(
    roots: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    assert child(roots, state, "16", "kill").wait() == -signal.SIGKILL
    (roots.sys_block / "sda" / "diskseq").write_text("10\n")  # detached and attached again
    tuner = tree_tuner(roots, state)
    (left,) = tuner.journal.leftovers(roots)
    assert left.stale
    assert "diskseq 10, was 9" in left.identity
    assert tuner.journal.leftover_refusal(roots, "sda") is None
    with pytest.raises(TuningError, match="not restored"):
        tuner.restore_leftover(left)
    assert sysfs(roots, "read_ahead_kb") == "32"


def test_nothing_identifies_the_device_so_restore_asks(roots: Roots, tmp_path: Path) -> None:
    (roots.sys_block / "sda" / "diskseq").unlink()
    state = tmp_path / "state"
    assert child(roots, state, "16", "kill").wait() == -signal.SIGKILL
    tuner = tree_tuner(roots, state)
    (left,) = tuner.journal.leftovers(roots)
    assert left.identity.startswith("unknown")
    with pytest.raises(TuningError, match="nothing identifies"):
        tuner.restore_leftover(left)


def test_an_unreadable_journal_is_an_error_not_no_leftovers(tmp_path: Path, roots: Roots) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "changes.jsonl").symlink_to("/etc/hostname")
    with pytest.raises(JournalError, match="symbolic link"):
        Journal.in_dir(state).leftovers(roots)


def test_a_tail_from_the_end_reads_only_what_is_written_after_it_starts(tmp_path: Path) -> None:
    """The recorder's tail (``from_end``): the journal's past is not an event of this
    recording; what other runs append, and a journal that appears later, are."""
    from iotop_plus.state import CHANGES, PROBES, JsonlTail, StateDir

    state = StateDir(tmp_path / "state")
    state.append(CHANGES, {"record": "change", "n": 1})
    changes = JsonlTail(state, CHANGES, from_end=True)
    probes = JsonlTail(state, PROBES, from_end=True)  # no file yet
    state.append(CHANGES, {"record": "change", "n": 2})
    state.append(PROBES, {"record": "probe-result", "n": 3})
    assert [d["n"] for d in changes.read()[1]] == [2]
    assert [d["n"] for d in probes.read()[1]] == [3]
    assert changes.read() == (False, [])
    everything = JsonlTail(state, CHANGES)  # serve's tail: the whole file
    assert [d["n"] for d in everything.read()[1]] == [1, 2]
    state.close()
