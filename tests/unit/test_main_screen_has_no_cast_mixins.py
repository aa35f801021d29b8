"""#23 item 3: the main screen's keys and views are collaborators it owns, given what they need,
not mixins whose methods start with ``cast("MainScreen", self)`` and use the screen's private
members. These tests fail if such a mixin comes back."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grimp

import iotop_plus.tui
from iotop_plus.tui.screens.main import MainScreen

TUI = Path(iotop_plus.tui.__file__).resolve().parent
MAIN = "iotop_plus.tui.screens.main"
CAST_TO_MAIN = re.compile(r"""\bcast\(\s*(["']\s*)?MainScreen\b""")
"""``cast("MainScreen", x)``, ``cast('MainScreen', x)`` or ``cast(MainScreen, x)``."""


def test_no_module_under_tui_casts_to_the_main_screen() -> None:
    casts = [
        f"{path.relative_to(TUI).as_posix()}:{number}: {line.strip()}"
        for path in sorted(TUI.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if CAST_TO_MAIN.search(line)
    ]
    assert casts == [], "cast to MainScreen (make it a collaborator): " + "; ".join(casts)


def test_the_cast_pattern_finds_each_spelling() -> None:
    for line in ('cast("MainScreen", self)', "cast('MainScreen', self)", "cast(MainScreen, self)"):
        assert CAST_TO_MAIN.search(line), line
    assert not CAST_TO_MAIN.search('cast("SettingsPanel", self.panel("tab-tune"))')


def test_no_part_of_the_main_screen_imports_it_back() -> None:
    """Even for type hints: a part that names the screen's type is a mixin in disguise."""
    graph = grimp.build_graph("iotop_plus", cache_dir=None)
    parts = sorted(m for m in graph.modules if m.startswith(f"{MAIN}_"))
    back = {part: graph.find_shortest_chain(importer=part, imported=MAIN) for part in parts}
    assert {part: chain for part, chain in back.items() if chain} == {}
    assert {f"{MAIN}_table", f"{MAIN}_panels", f"{MAIN}_views"} <= set(parts)


def test_the_main_screen_inherits_from_no_module_that_imports_it() -> None:
    graph = grimp.build_graph("iotop_plus", cache_dir=None)
    ours = [c for c in MainScreen.__mro__[1:] if c.__module__.startswith("iotop_plus.")]
    back = {
        c.__qualname__: graph.find_shortest_chain(importer=c.__module__, imported=MAIN)
        for c in ours
    }
    assert {name: chain for name, chain in back.items() if chain} == {}


def test_the_import_contract_names_every_part_of_the_main_screen() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(linter), "--no-cache", "--no-logo", "--contract", "main-screen-above-its-parts"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    contract = (
        (TUI.parents[1] / "pyproject.toml")
        .read_text()
        .split('id = "main-screen-above-its-parts"', 1)[1]
    )
    sources = contract.split("forbidden_modules", 1)[0]
    parts = sorted(p.stem for p in (TUI / "screens").glob("main_*.py"))
    assert parts and [p for p in parts if f'"iotop_plus.tui.screens.{p}"' not in sources] == []
