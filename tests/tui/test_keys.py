"""Keys: no clash between the screen and its panels, and the checker can tell a clash."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from iotop_plus.tui.keys import (
    find_clashes,
    help_lines,
    key_display,
    palette_entries,
    screen_clashes,
    tab_of,
)
from iotop_plus.tui.screens.help import help_text
from iotop_plus.tui.screens.main import MainScreen
from iotop_plus.tui.screens.side_panels import DEFERRED_TABS
from tests.tui.canned import canned_app
from tests.tui.helpers import started


async def test_the_main_screen_and_every_panel_have_no_key_clash() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        for tab in DEFERRED_TABS:
            await screen.panels.ready(tab)
        await pilot.pause()
        names = {type(n).__name__ for n in screen.walk_children()}
        # The panels the check must cover are really mounted.
        assert {"SettingsPanel", "ProcessPanel", "ProbePanel", "DeviceTable"} <= names
        assert screen_clashes(screen) == []


class Clashing(Widget, can_focus=True):
    """A panel whose keys clash with the screen's below."""

    BINDINGS = [
        Binding("x", "panel_thing", "Panel thing"),  # the screen's x does something else
        Binding("y", "panel_other", "Other"),  # shadowed: the screen's y has priority
        Binding("down", "cursor(1)", "Down"),  # navigation inside the widget: allowed
        Binding("R", "edit", "Same", id="same.command"),  # one command, two bindings: allowed
    ]


class Neighbour(Widget, can_focus=True):
    """A second widget on the same tab as ``Clashing``, with a key of its own."""

    BINDINGS = [Binding("z", "neighbour", "Z")]


class OtherTab(Widget, can_focus=True):
    """On another tab: never visible with ``Neighbour``, so its z is no clash."""

    BINDINGS = [Binding("z", "elsewhere", "Z"), Binding("k", "k_here", "K")]


class OtherTabToo(Widget, can_focus=True):
    """Next to ``OtherTab``: its k runs something else, depending on focus."""

    BINDINGS = [Binding("k", "k_there", "K")]


class ClashScreen(Screen[None]):
    BINDINGS = [
        Binding("x", "screen_thing", "Screen thing"),
        Binding("y", "screen_other", "Other", priority=True),
        Binding("down", "screen_down", "Down"),
        Binding("R", "tune", "Same", id="same.command"),
    ]

    def compose(self) -> ComposeResult:
        with TabbedContent():
            with TabPane("one", id="one"):
                yield Clashing()
                yield Neighbour()
            with TabPane("two", id="two"):
                yield OtherTab()
                yield OtherTabToo()
        yield Static("no keys")


class ClashApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(ClashScreen())


async def test_the_checker_reports_a_deliberate_clash() -> None:
    app = ClashApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        problems = screen_clashes(app.screen)
    assert len(problems) == 3, problems
    k, x, y = sorted(problems)
    assert x.startswith("x:") and "panel_thing" in x and "screen_thing" in x
    assert y.startswith("y:") and "shadowed" in y and "screen_other" in y
    assert k.startswith("k:") and "k_here" in k and "k_there" in k
    # Not reported: "down" (navigation), "R" (same command id), "z" (tabs apart).


def test_the_checker_without_a_running_app() -> None:
    screen = [Binding("a", "screen_a", "A")]
    assert find_clashes({"screen": screen}, {"panel": [Binding("b", "b", "B")]}) == []
    clash = find_clashes({"screen": screen}, {"panel": [Binding("b,a", "panel_a", "A")]})
    assert clash == ["a: runs panel's 'panel_a' when it has focus, else screen's 'screen_a'"]
    # Escape, Enter, arrows, Home/End and PageUp/PageDown are a list's own.
    nav = [Binding(k, "mine", "") for k in ("escape", "enter", "left", "end", "pagedown")]
    assert find_clashes({"screen": [Binding("escape,end", "other", "")]}, {"list": nav}) == []


def test_help_and_palette_are_made_from_the_bindings() -> None:
    # The screen's bindings of panel keys (tab-limited) are listed with their tab's keys.
    screen = [b for b in MainScreen.BINDINGS if isinstance(b, Binding) and tab_of(b) is None]
    text = help_text()
    for key, explanation in help_lines(screen):
        assert f"{key:<24}" in text and explanation in text
    palette = {action for _title, _help, action in palette_entries(MainScreen.KEYS)}
    # A panel key's palette entry shows its tab first (panel_command, not panel_key).
    bindings = [b for b in MainScreen.BINDINGS if isinstance(b, Binding)]
    assert len(bindings) == len(MainScreen.BINDINGS)  # no tuple shorthand
    bound = {b.action.replace("panel_key(", "panel_command(") for b in bindings}
    assert palette == bound
    assert "Tune" in text and "E Export" in text  # panel keys listed too
    assert key_display("ctrl+c") == "Ctrl-C" and key_display("pageup") == "PgUp"


def test_the_help_explains_why_a_process_can_read_above_100_percent_io() -> None:
    """#17 item 13: "IO% reads above 100 %" with nothing saying why."""
    text = help_text()
    line = next(line for line in text.splitlines() if line.strip().startswith("[b]IO%"))
    assert "capped at 100 %" in line and "400 %" in line and "thread" in line


def test_a_panels_keys_are_declared_once_in_the_registry() -> None:
    """A panel's bindings and the screen's bindings of the same keys come from one record of
    :data:`~iotop_plus.tui.keys.PANEL_COMMANDS`: one id, one action, one label each."""
    from iotop_plus.tui import keys
    from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel
    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel

    panels = {
        keys.TUNE: SettingsPanel,
        keys.PROCESSES: ProcessPanel,
        keys.CGROUPS: CgroupPanel,
        keys.PROBE: ProbePanel,
    }
    screen = {b.id: b for b in MainScreen.BINDINGS if isinstance(b, Binding) and b.id}
    for tab, panel in panels.items():
        declared = panel.__dict__["BINDINGS"]
        assert declared == keys.panel_bindings(tab), panel.__name__
        for binding in declared:
            if binding.key in keys.NAVIGATION_KEYS:
                assert binding.id not in screen  # the focused list's own key
                continue
            twin = screen[binding.id]  # the screen's binding of the same command
            assert (twin.key, twin.description) == (binding.key, binding.description)
