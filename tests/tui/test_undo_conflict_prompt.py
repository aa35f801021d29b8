"""``u`` asks before it undoes a setting that changed since this run set it (another run on
the same state directory set it): put the original back, or leave the value it has now. Both
answers are journaled.

The tuners work on a temporary sysfs tree through an injected writer; the app runs on the
canned host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

from iotop_plus.config import Config
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.tui.app import make_app
from iotop_plus.tui.screens.settings_modals import ConflictScreen, KeepOrRevertScreen
from tests.support.wait import wait_for
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.tui.helpers import parts_up
from tests.tui.test_journal_tui import app_with, read_ahead
from tests.unit.test_settings import make_tree


@pytest.fixture
def tree(tmp_path: Path) -> Roots:
    roots = make_tree(tmp_path / "tree")
    (roots.sys_block / "sda" / "dev").write_text("8:0\n")
    (roots.sys_block / "sda" / "diskseq").write_text("9\n")
    return roots


def nomerges(roots: Roots) -> str:
    return (roots.sys_block / "sda" / "queue" / "nomerges").read_text().strip()


def conflicts(state: Path) -> list[dict[str, object]]:
    lines = (state / "changes.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["record"] == "conflict"]


@pytest.mark.parametrize(("key", "choice"), [("p", "put_back"), ("l", "leave")])
async def test_u_asks_put_back_or_leave_when_another_run_changed_the_setting(
    tree: Roots, tmp_path: Path, key: str, choice: str
) -> None:
    state = tmp_path / "state"
    app = app_with(tree, state)
    other = Tuner(tree, Journal.in_dir(state), is_root=True, writer=write_tree_file)
    original = read_ahead(tree)
    async with app.run_test(size=(100, 30)) as pilot:
        await parts_up(pilot, app)
        app.tuner.apply("sda", "read_ahead_kb", "64")
        other.apply("sda", "read_ahead_kb", "2048")
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConflictScreen), "asked", timeout=5)
        question = " ".join(
            str(app.screen.query_one("#conflict-question", Static).render()).split()
        )
        assert question == (
            f"sda read_ahead_kb is 2048 now (set by run {other.journal.run_id}); this run set "
            f"64, the original was {original}: put back {original}, or leave 2048?"
        )
        assert read_ahead(tree) == "2048"  # nothing written while asking
        await pilot.press(key)
        await wait_for(pilot, lambda: app.tuner.active == (), "answered", timeout=5)
        assert not isinstance(app.screen, ConflictScreen)
    assert read_ahead(tree) == (original if choice == "put_back" else "2048")
    (record,) = conflicts(state)
    assert (record["choice"], record["run"], record["changed_by"]) == (
        choice,
        app.tuner.journal.run_id,
        other.journal.run_id,
    )
    other.keep("test")
    for journal in (app.tuner.journal, other.journal):
        journal.close()
    assert Journal.in_dir(state).leftovers(tree) == []  # answered either way: nothing left


async def test_escape_decides_later_and_writes_nothing(tree: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await parts_up(pilot, app)
        app.tuner.apply("sda", "read_ahead_kb", "64")
        (tree.sys_block / "sda" / "queue" / "read_ahead_kb").write_text("512\n")  # by hand
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConflictScreen), "asked", timeout=5)
        text = str(app.screen.query_one("#conflict-question", Static).render())
        assert "changed by hand or by another tool" in " ".join(text.split())
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConflictScreen), "closed")
        assert read_ahead(tree) == "512"
        assert len(app.tuner.active) == 1
    assert conflicts(state) == []
    app.tuner.journal.close()


async def test_quit_with_revert_asks_about_a_setting_changed_since(
    tree: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await parts_up(pilot, app)
        app.tuner.apply("sda", "nomerges", "1")  # nobody touches this one: reverted
        app.tuner.apply("sda", "read_ahead_kb", "64")
        (tree.sys_block / "sda" / "queue" / "read_ahead_kb").write_text("512\n")  # by hand
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, KeepOrRevertScreen), "quit asked")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ConflictScreen), "asked", timeout=5)
        assert read_ahead(tree) == "512"
        await pilot.press("l")
        await wait_for(pilot, lambda: app.return_code is not None, "exited", timeout=5)
    assert (read_ahead(tree), nomerges(tree)) == ("512", "0")
    assert [r["choice"] for r in conflicts(state)] == ["leave"]
    app.tuner.journal.close()
    assert Journal.in_dir(state).leftovers(tree) == []


async def test_revert_on_exit_leaves_a_setting_changed_since_and_says_so(
    tree: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    sampler = CannedSampler()
    tuner = Tuner(tree, Journal.in_dir(state), is_root=True, writer=write_tree_file)
    app = make_app(
        HOST_ROOTS,
        Config(interval=10.0),
        sampler=sampler,
        host=sampler.host_info(),
        tuner=tuner,
        revert_on_exit=True,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await parts_up(pilot, app)
        tuner.apply("sda", "read_ahead_kb", "64")
        (tree.sys_block / "sda" / "queue" / "read_ahead_kb").write_text("512\n")  # by hand
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, "exited", timeout=5)
    assert app.return_value == 1  # run_tui exits with it
    assert read_ahead(tree) == "512"  # nobody could be asked: left as it is
    assert [r["choice"] for r in conflicts(state)] == ["refused"]
    tuner.journal.close()
    (left,) = Journal.in_dir(state).leftovers(tree)  # restore --force can still put it back
    assert (left.original, left.left) == ("128", "64")
