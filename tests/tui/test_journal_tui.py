"""The app and the journal (#11): the restore offer at start, keep on quit, keep on hangup.

The tuner works on a temporary sysfs tree through an injected writer; the app runs on the
canned host. A "run that died" is a real child process killed with SIGKILL.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from iotop_plus.config import Config
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.tui import lifecycle as lifecycle_module
from iotop_plus.tui.app import IotopPlusApp, make_app
from iotop_plus.tui.screens.settings_modals import KeepOrRevertScreen, RestoreLeftoversScreen
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.unit.test_journal import child
from tests.unit.test_settings import make_tree


@pytest.fixture
def tree(tmp_path: Path) -> Roots:
    roots = make_tree(tmp_path / "tree")
    (roots.sys_block / "sda" / "dev").write_text("8:0\n")
    (roots.sys_block / "sda" / "diskseq").write_text("9\n")
    return roots


def read_ahead(roots: Roots) -> str:
    return (roots.sys_block / "sda" / "queue" / "read_ahead_kb").read_text().strip()


def app_with(tree: Roots, state: Path) -> IotopPlusApp:
    sampler = CannedSampler()
    tuner = Tuner(tree, Journal.in_dir(state), is_root=True, writer=write_tree_file)
    return make_app(
        HOST_ROOTS,
        Config(interval=10.0),
        sampler=sampler,
        host=sampler.host_info(),
        tuner=tuner,
    )


def kinds(state: Path) -> list[tuple[str, str | None]]:
    lines = [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]
    return [(x["record"], x.get("reason")) for x in lines]


async def test_the_app_offers_to_restore_what_a_dead_run_left(tree: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert child(tree, state, "16", "kill").wait() == -signal.SIGKILL
    assert read_ahead(tree) == "32"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RestoreLeftoversScreen)
        assert "sda read_ahead_kb: 32 (original 128)" in str(
            app.screen.query_one("#leftover-list").render()
        )
        await pilot.press("r")
        await pilot.pause()
        assert not isinstance(app.screen, RestoreLeftoversScreen)
    assert read_ahead(tree) == "128"
    assert kinds(state)[-1] == ("closed", "restored")


async def test_no_offer_without_leftovers_and_keep_on_quit_is_journaled(
    tree: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, RestoreLeftoversScreen)
        app.tuner.apply("sda", "read_ahead_kb", "64")
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, KeepOrRevertScreen)
        await pilot.press("k")
        await pilot.pause()
    assert read_ahead(tree) == "64"
    assert kinds(state)[-1] == ("keep", "quit")
    assert Journal.in_dir(state).leftovers(tree) == []


async def test_a_hangup_keeps_the_changes_and_says_so(
    tree: Roots, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The exit watchdog would end the test process: keep it far away.
    monkeypatch.setattr(lifecycle_module, "EXIT_WATCHDOG_S", 1e6)
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.tuner.apply("sda", "read_ahead_kb", "64")
        app.lifecycle.exit_on_signal(signal.SIGHUP)
        await pilot.pause()
    assert read_ahead(tree) == "64"
    assert kinds(state)[-1] == ("keep", "hangup")
    assert "iotop-plus: hangup: kept 1 setting change (reason hangup)" in capfd.readouterr().err
    assert Journal.in_dir(state).leftovers(tree) == []
