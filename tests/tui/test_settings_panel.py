"""The settings panel in a small host app, driven by keys in the Pilot, on a real loop device
the test made (its queue settings are put back afterwards)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, OptionList

from iotop_plus.devices.changes import Change
from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.tui.screens.settings_modals import KeepOrRevertScreen, ValuePickerScreen
from iotop_plus.tui.widgets.settings_panel import SettingsPanel
from tests.support.queue_guard import queue_values, restored_queue

pytestmark = pytest.mark.root

LIVE = Roots()


class Host(App[None]):
    """Just the panel, focused, recording what it posts."""

    def __init__(self, tuner: Tuner, device: str) -> None:
        super().__init__()
        self.tuner = tuner
        self.device = device
        self.changes: list[Change] = []
        self.failures: list[str] = []

    def compose(self) -> ComposeResult:
        yield SettingsPanel(self.tuner, LIVE, id="settings")

    def on_mount(self) -> None:
        panel = self.query_one(SettingsPanel)
        panel.set_device(self.device)
        panel.query_one("#settings-list", OptionList).focus()

    def on_settings_panel_changed(self, event: SettingsPanel.Changed) -> None:
        self.changes.append(event.change)

    def on_settings_panel_failed(self, event: SettingsPanel.Failed) -> None:
        self.failures.append(event.text)


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    name = make_loop(32)
    with restored_queue(name):
        yield name


@pytest.fixture
def tuner(tmp_path: Path) -> Tuner:
    return Tuner(LIVE, Journal(tmp_path / "state" / "changes.jsonl"))


async def test_read_ahead_preset_then_undo(loop: str, tuner: Tuner) -> None:
    original = queue_values(loop)
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(SettingsPanel)
        assert f"read-ahead            {original['read_ahead_kb']} KiB" in panel.text
        await pilot.press("R")
        assert isinstance(app.screen, ValuePickerScreen)
        await pilot.press("down", "enter")  # 0 -> 16 KiB
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert queue_values(loop)["read_ahead_kb"] == "16"
        assert [(c.setting, c.old, c.effective) for c in app.changes] == [
            ("read_ahead_kb", original["read_ahead_kb"], "16")
        ]
        assert f"{loop} read-ahead: {original['read_ahead_kb']} -> 16" in panel.last_result
        assert "#1 " in panel.log_text

        await pilot.press("E")
        state = tuner.journal.path.parent  # type: ignore[union-attr]
        exported = sorted(p.name for p in state.iterdir() if p.is_file())  # runs/ holds locks
        assert [n.rsplit(".", 1)[1] for n in exported] == ["jsonl", "rules", "sh"]
        assert panel.last_result.startswith("exported ")

        await pilot.press("u")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert queue_values(loop) == original
        assert app.changes[-1].action == "undo"
        assert "(undone)" in panel.log_text
        assert f"read-ahead            {original['read_ahead_kb']} KiB" in panel.text


async def test_typed_read_ahead_shows_the_rounded_effective_value(loop: str, tuner: Tuner) -> None:
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("R")
        app.screen.query_one("#picker-input", Input).focus()
        await pilot.press("1", ".", "5", "enter")
        # Refused inline, before anything is written; the picker stays open.
        assert isinstance(app.screen, ValuePickerScreen)
        error = app.screen.query_one("#picker-error")
        assert "'1.5' is not a whole number" in str(error.render())
        assert tuner.journal.entries == ()
        await pilot.press("backspace", "backspace", "backspace", "7", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert queue_values(loop)["read_ahead_kb"] == "4"
        panel = app.query_one(SettingsPanel)
        assert "-> 4 (asked 7: rounded down to whole 4 KiB pages)" in panel.last_result


async def test_scheduler_from_the_devices_list_and_undo_restores_nr_requests(
    loop: str, tuner: Tuner
) -> None:
    original = queue_values(loop)
    assert original["scheduler"] == "none"
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("S")
        picker = app.screen
        assert isinstance(picker, ValuePickerScreen)
        assert [v for _, v in picker.options] == ["none", "mq-deadline", "kyber", "bfq"]
        await pilot.press("down", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert queue_values(loop)["scheduler"] == "mq-deadline"
        assert queue_values(loop)["nr_requests"] != original["nr_requests"]
        panel = app.query_one(SettingsPanel)
        assert "I/O scheduler         mq-deadline" in panel.text
        await pilot.press("u")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert queue_values(loop) == original


async def test_advanced_settings_and_revert_all(loop: str, tuner: Tuner) -> None:
    original = queue_values(loop)
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 40)) as pilot:
        panel = app.query_one(SettingsPanel)
        assert "merging" not in panel.text
        await pilot.press("A")
        assert "merging" in panel.text
        options = panel.query_one("#settings-list", OptionList)
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = ids.index("nomerges")
        await pilot.press("enter")
        assert isinstance(app.screen, ValuePickerScreen)
        await pilot.press("down", "down", "enter")  # 0 -> 2
        await app.workers.wait_for_complete()
        await pilot.pause()
        options.highlighted = ids.index("nr_requests")
        await pilot.press("enter")
        await pilot.press("6", "4", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("R", "down", "down", "enter")  # 128 KiB
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (
            queue_values(loop)["nomerges"],
            queue_values(loop)["nr_requests"],
            queue_values(loop)["read_ahead_kb"],
        ) == ("2", "64", "128")

        await pilot.press("U")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert queue_values(loop) == original
        assert tuner.active == ()
        assert panel.last_result == "reverted 3 changes"
        assert [c.action for c in app.changes] == ["set"] * 3 + ["revert"] * 3


async def test_kernel_refusal_is_shown_and_nothing_changes(loop: str, tuner: Tuner) -> None:
    original = queue_values(loop)
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 40)) as pilot:
        panel = app.query_one(SettingsPanel)
        await pilot.press("A")
        options = panel.query_one("#settings-list", OptionList)
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        options.highlighted = ids.index("nr_requests")
        await pilot.press("enter", "9", "9", "9", "9", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.failures and "value not accepted by this device (valid: 4 to" in app.failures[0]
        assert panel.last_result == app.failures[0]
        assert queue_values(loop) == original


async def test_without_root_the_panel_is_read_only_and_says_why(loop: str) -> None:
    tuner = Tuner(LIVE, is_root=False)
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(SettingsPanel)
        assert "read-only: changing queue settings needs root" in panel.text
        await pilot.press("R")
        assert not isinstance(app.screen, ValuePickerScreen)
        assert panel.last_result == "read_ahead_kb: read-only: changing queue settings needs root"
        await pilot.press("u")
        assert panel.last_result == "nothing to undo"


class KeepHost(App[None]):
    def __init__(self, changes: list[Change]) -> None:
        super().__init__()
        self.changes = changes
        self.answers: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(KeepOrRevertScreen(self.changes), self.answers.append)


@pytest.mark.parametrize(("key", "answer"), [("k", "keep"), ("v", "revert"), ("escape", None)])
async def test_keep_or_revert_on_exit(key: str, answer: str | None) -> None:
    change = Change(1, 0.0, "set", "loop9", "loop9", "read_ahead_kb", "128", "7", "4", "rounded")
    app = KeepHost([change])
    async with app.run_test(size=(80, 24)) as pilot:
        assert "loop9 read-ahead: 128 -> 4 (asked 7: rounded)" in str(
            app.screen.query_one("#keep-changes").render()
        )
        await pilot.press(key)
        assert app.answers == [answer]


async def test_scheduler_line_does_not_read_none_of_none_mq_deadline(
    loop: str, tuner: Tuner
) -> None:
    """It read 'none  of none mq-deadline kyber bfq': the current one, then the others."""
    app = Host(tuner, loop)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        text = app.query_one(SettingsPanel).text
        assert "I/O scheduler         none (also: mq-deadline, kyber, bfq)" in text
        assert " of none" not in text
