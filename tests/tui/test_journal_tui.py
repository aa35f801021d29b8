"""The app and the journal (#11, #22): the restore offer at start (restore, keep or later),
keep on quit, and a hangup that leaves changes in force without keeping them.

The tuner works on a temporary sysfs tree through an injected writer; the app runs on the
canned host. A "run that died" is a real child process killed with SIGKILL.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from textual.containers import Vertical
from textual.pilot import Pilot

from iotop_plus.config import Config
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.tui import lifecycle as lifecycle_module
from iotop_plus.tui.app import IotopPlusApp, make_app
from iotop_plus.tui.engine.testing import screen_lines
from iotop_plus.tui.screens.settings_modals import KeepOrRevertScreen, RestoreLeftoversScreen
from tests.support.wait import wait_for
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.tui.helpers import parts_up
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


async def offered(pilot: Pilot[int], app: IotopPlusApp) -> None:
    """Wait for the restore offer: it comes once the first paint is done and the side panel
    is up (the tuner's modules are not on the way to the first figures)."""
    await wait_for(
        pilot, lambda: isinstance(app.screen, RestoreLeftoversScreen), "the restore offer"
    )


def records(state: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]


def kinds(state: Path) -> list[tuple[str, str | None]]:
    return [(str(x["record"]), x.get("reason")) for x in records(state)]  # type: ignore[misc]


async def test_the_app_offers_to_restore_what_a_dead_run_left(tree: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert child(tree, state, "16", "kill").wait() == -signal.SIGKILL
    assert read_ahead(tree) == "32"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await offered(pilot, app)
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
        await parts_up(pilot, app)  # keys go to the screen at once, not held till then
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


async def test_a_hangup_leaves_the_changes_in_force_but_not_kept(
    tree: Roots, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # #22 item 3 (the SIGHUP ruling replaces "a hangup keeps"): an SSH drop must not keep an
    # experiment silently. The change stays in force, no keep record is written, and once the
    # run is gone it is a leftover that restore offers.
    monkeypatch.setattr(lifecycle_module, "EXIT_WATCHDOG_S", 1e6)  # it would end pytest
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.tuner.apply("sda", "read_ahead_kb", "64")
        app.lifecycle.exit_on_signal(signal.SIGHUP)
        await pilot.pause()
        assert capfd.readouterr().err == "", "nothing inside the alternate screen"
    app.tuner.journal.close()  # what run_tui does when the app has exited: the run is over
    app.lifecycle.say_farewell()
    assert read_ahead(tree) == "64"
    assert ("keep", "hangup") not in kinds(state)
    assert kinds(state)[-1] == ("change", None)
    err = capfd.readouterr().err
    assert "iotop-plus: hangup: 1 setting change left in force, not kept;" in err
    # The hint names the state directory the run used, or restore would look elsewhere.
    assert f"`iotop-plus --state-dir {state} restore`" in err
    assert f"`iotop-plus --state-dir {state} restore --keep`" in err
    (left,) = Journal.in_dir(state).leftovers(tree)
    assert (left.device, left.setting, left.left, left.original) == (
        "sda", "read_ahead_kb", "64", "128",
    )  # fmt: skip


async def test_quit_with_keep_still_keeps_after_the_hangup_ruling(
    tree: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await parts_up(pilot, app)  # keys go to the screen at once, not held till then
        app.tuner.apply("sda", "read_ahead_kb", "64")
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("k")
        await pilot.pause()
    app.tuner.journal.close()
    assert kinds(state)[-1] == ("keep", "quit")
    assert Journal.in_dir(state).leftovers(tree) == []


async def test_the_start_dialog_keeps_a_dead_runs_values_with_k(
    tree: Roots, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    assert child(tree, state, "16", "kill").wait() == -signal.SIGKILL
    app = app_with(tree, state)
    async with app.run_test(size=(100, 30)) as pilot:
        await offered(pilot, app)
        await pilot.press("k")
        await pilot.pause()
        assert not isinstance(app.screen, RestoreLeftoversScreen)
    assert read_ahead(tree) == "32"  # kept: nothing written
    closed = [x for x in records(state) if x["record"] == "closed"]
    assert {x["reason"] for x in closed} == {"kept"} and len(closed) == 2
    assert Journal.in_dir(state).leftovers(tree) == []


def screen_text(app: IotopPlusApp) -> list[str]:
    """Every line the top screen shows now, as plain text."""
    return screen_lines(app.screen)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_the_restore_prompt_is_never_cut(
    tree: Roots, tmp_path: Path, size: tuple[int, int]
) -> None:
    # #22 item 12: at 80x24 the title read "...without undoing t".
    state = tmp_path / "state"
    assert child(tree, state, "16", "kill").wait() == -signal.SIGKILL
    app = app_with(tree, state)
    async with app.run_test(size=size) as pilot:
        await offered(pilot, app)
        await wait_for(
            pilot, lambda: any("(original 128)" in x for x in screen_text(app)), "the dialog drawn"
        )
        lines = screen_text(app)
        # Inside the box's border, line after line: wrapped text reads on, cut text does not.
        box = app.screen.query_one(Vertical).region
        inside = [x[box.x + 1 : box.right - 1] for x in lines[box.y + 1 : box.bottom - 1]]
        text = " ".join(" ".join(inside).split())
        for part in (
            "1 setting left changed by a run that ended without undoing or keeping it",
            "sda read_ahead_kb: 32 (original 128)",
            "r restores the originals, k keeps these values, escape decides later",
            "Restore (r)",
            "Keep (k)",
            "Later (esc)",
        ):
            assert part in text, f"{part!r} is cut or missing at {size}:\n" + "\n".join(inside)


def with_delayacct(tree: Roots) -> Path:
    kernel = tree.proc / "sys" / "kernel"
    (kernel / "random").mkdir(parents=True)
    (kernel / "random" / "boot_id").write_text("5b1c0f7e-0000-4000-8000-000000000001\n")
    (kernel / "task_delayacct").write_text("0\n")
    return kernel / "task_delayacct"


async def test_u_undoes_D_like_any_setting_change(tree: Roots, tmp_path: Path) -> None:
    # #22 item 4: D is a host setting, undone by u.
    sysctl = with_delayacct(tree)
    app = app_with(tree, tmp_path / "state")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.tuner.switch_delayacct(True)
        assert sysctl.read_text().strip() == "1"
        await pilot.press("u")
        await wait_for(pilot, lambda: sysctl.read_text().strip() == "0", "D undone", timeout=5)
        assert app.tuner.active == ()


async def test_quit_offers_to_revert_D(tree: Roots, tmp_path: Path) -> None:
    sysctl = with_delayacct(tree)
    state = tmp_path / "state"
    app = app_with(tree, state)
    async with app.run_test(size=(80, 24)) as pilot:
        await parts_up(pilot, app)  # keys go to the screen at once, not held till then
        app.tuner.switch_delayacct(True)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, KeepOrRevertScreen)
        listed = str(app.screen.query_one("#keep-changes").render())
        assert "host kernel.task_delayacct: 0 -> 1" in listed
        await pilot.press("v")
        await pilot.pause()
    assert sysctl.read_text().strip() == "0"
    assert [x.get("scope") for x in records(state) if x["record"] == "change"] == ["host"] * 2
