"""#17 "Also: --read-only": no tuning, no probes, no experiments; the header says read-only
and the keys for those actions say why they do nothing (one line)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from iotop_plus.cli import build_parser
from iotop_plus.config import Config, config_from_mapping
from iotop_plus.tui.screens.refusals import READ_ONLY_REFUSAL
from iotop_plus.tui.widgets.header import HostHeader
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for


def test_read_only_is_a_global_option_and_a_config_key() -> None:
    assert build_parser().parse_args(["--read-only"]).read_only is True
    assert build_parser().parse_args([]).read_only is False
    problems: list[str] = []
    assert config_from_mapping({"read_only": True}, problems).read_only is True
    assert problems == []
    assert "\n" not in READ_ONLY_REFUSAL


async def test_read_only_refuses_tuning_probes_and_experiments_with_the_reason() -> None:
    app = canned_app(Config(interval=10.0, read_only=True))
    # Every notification as it is posted: Textual drops a toast from app._notifications once
    # it has been shown its 5 s, which a busy host's run of this test outlasted.
    said: list[str] = []
    post = app.notify

    def noted(message: str, *args: Any, **kwargs: Any) -> None:
        said.append(message)
        post(message, *args, **kwargs)

    app.notify = noted  # type: ignore[method-assign]
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        assert "read-only" in screen.query_one(HostHeader).text
        screen.select_device("sda")
        # The selection has settled once the settings of sda are read (watching goes on).
        await wait_for(
            pilot,
            lambda: screen.selection.settings is not None and screen.selection.settings[0] == "sda",
        )
        for key in ("R", "S", "u", "U", "X"):
            await pilot.press(key)
            await pilot.pause()
        assert app.screen is screen  # no picker, no experiment dialog
        await pilot.press("p", "D")  # delay accounting is a sysctl: a change to the system
        await pilot.pause()
        screen.panels.process_panel.process_list.focus()  # the panel's own D refuses too
        await pilot.pause()
        await pilot.press("D")
        await pilot.pause()
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        await commands["Probe: start"].callback()
        await commands["Tune: export changes"].callback()
        await pilot.pause()
        assert said.count(READ_ONLY_REFUSAL) == 9, said
        for tab in ("tab-tune", "tab-probe"):
            await screen.run_action(f"panel_tab('{tab}')")
            await screen.panels.ready(tab)
            await pilot.pause()
            shown = screen.query_one(f"#{tab}-refused", Static)
            assert str(shown.render()) == READ_ONLY_REFUSAL
        names = {type(n).__name__ for n in screen.walk_children()}
        assert "SettingsPanel" not in names and "ProbePanel" not in names
        # Watching goes on: the processes and the device's settings are shown.
        assert "ProcessPanel" in names and screen.selection.reads >= 1


async def test_without_read_only_the_header_does_not_say_it() -> None:
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        assert "read-only" not in app.main_screen.query_one(HostHeader).text
