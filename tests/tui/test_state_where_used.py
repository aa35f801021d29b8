"""State where it is used: the interval, the pause and the scrub position are the main screen's,
the app's own keys are in the key registry, and nothing the app builds imports the app back."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
from textual.reactive import Reactive

from iotop_plus.config import Config
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.keys import APP_KEYS, as_binding
from iotop_plus.tui.screens.help import help_text
from iotop_plus.tui.screens.main import MainScreen
from iotop_plus.tui.screens.refusals import READ_ONLY_REFUSAL, REPLAY_REFUSAL, Refusals
from iotop_plus.tui.widgets.header import HostHeader
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step_to

TUI = Path(__file__).resolve().parents[2] / "iotop_plus" / "tui"
BELOW_THE_APP = [
    *sorted((TUI / "screens").glob("*.py")),
    *sorted((TUI / "widgets").glob("*.py")),
    *(TUI / f"{name}.py" for name in ("scrub", "frame_feed", "lifecycle", "palette", "keys")),
]
"""Modules the app builds or calls: none of them may import the app (even for type hints)."""


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_screens_and_widgets_never_import_the_app() -> None:
    importers = [
        path.relative_to(TUI).as_posix()
        for path in BELOW_THE_APP
        if "iotop_plus.tui.app" in imported_modules(path)
    ]
    assert importers == [], f"these import iotop_plus.tui.app back: {importers}"


def test_the_import_contract_on_the_app_is_kept() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(linter), "--no-cache", "--no-logo", "--contract", "app-above-screens"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "screens and widgets never import the app" in done.stdout


def test_the_apps_own_keys_come_from_the_key_registry() -> None:
    assert [as_binding(b) for b in IotopPlusApp.BINDINGS] == [c.binding() for c in APP_KEYS]
    assert {c.action for c in APP_KEYS} == {"quit"}
    text = help_text()
    assert APP_KEYS[0].explain in text  # the help's quit line is the registry's


def test_interval_and_the_shown_frame_are_reactives_of_the_main_screen() -> None:
    for name in ("interval", "shown"):
        assert isinstance(MainScreen.__dict__.get(name), Reactive), name
        assert name not in IotopPlusApp.__dict__, f"the app still holds {name}"
    # One reactive for what is on screen: the frame, its mode and position together.
    reactives = {n for n, v in MainScreen.__dict__.items() if isinstance(v, Reactive)}
    assert reactives == {"interval", "shown", "selected_device"}
    assert "scrubber" not in vars(canned_app(Config()))


async def test_space_plus_and_scrubbing_change_the_main_screens_state() -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        header = screen.query_one(HostHeader)
        await pilot.press("plus")
        assert screen.interval == 0.5 and "every 0.5s" in header.text
        assert app.sampler_thread is not None and app.sampler_thread.interval == 0.5
        await pilot.press("space")
        assert screen.shown.paused and "PAUSED" in header.text
        await pilot.press("space")
        assert not screen.shown.paused and screen.shown.at is None
        await step_to(pilot, app, lambda: app.frames_received >= 3, "a third frame")
        await pilot.press("left_square_bracket")
        shown = screen.shown_frame
        assert shown is not None and screen.shown.at == shown.wall_time
        assert screen.shown.paused and screen.scrubber.mode == "history"
        await pilot.press("l")
        assert screen.shown.at is None and not screen.shown.paused and "LIVE" in header.text


def test_refusals_are_one_collaborator_that_says_why_in_one_line() -> None:
    said: list[str] = []
    read_only = Refusals(replay=False, read_only=True, say=said.append)
    assert read_only.refused("tune") and read_only.refused("tab-probe:start")
    assert read_only.refused("tab-processes:toggle_delayacct")  # a sysctl: refused
    assert not read_only.refused("step") and not read_only.refused("tab-processes:toggle_totals")
    replay = Refusals(replay=True, read_only=False, say=said.append)
    assert replay.refused("experiment")
    assert not replay.refused("tab-processes:toggle_delayacct")  # acts on this host, as it says
    assert said == [READ_ONLY_REFUSAL] * 3 + [REPLAY_REFUSAL]
    assert not Refusals(replay=False, read_only=False, say=said.append).refused("tune")


def test_the_main_screens_parts_do_not_import_it_back() -> None:
    graph = grimp.build_graph("iotop_plus", cache_dir=None)
    parts = (
        "iotop_plus.tui.frame_feed",
        "iotop_plus.tui.scrub",
        "iotop_plus.tui.screens.main_charts",
        "iotop_plus.tui.screens.main_history",
        "iotop_plus.tui.screens.main_selection",
        "iotop_plus.tui.screens.main_actions",
        "iotop_plus.tui.shown",
        "iotop_plus.tui.screens.side_panels",
        "iotop_plus.tui.screens.refusals",
        "iotop_plus.tui.screens.help",
    )
    back = {
        part: graph.find_shortest_chain(importer=part, imported="iotop_plus.tui.screens.main")
        for part in parts
    }
    assert {part: chain for part, chain in back.items() if chain} == {}
