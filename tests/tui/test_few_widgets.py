"""The main screen draws with few widgets: Textual's paint cost follows the number of widgets
on screen. At 120x36, after the first frame, the default screen (header, table, the five charts
and their caption, the side panel's tab bar and Device tab) is at most 15 widgets, containers
and Textual's own included, and nothing that is not displayed is mounted. The side panel's tab
bar shows every tab, readable, at 120x36 and at 80x24."""

from __future__ import annotations

from textual.widget import Widget

from iotop_plus.config import Config
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.widgets.side_panel import SIDE_TABS, SidePanel
from iotop_plus.tui.widgets.tab_bar import TabBar, wrap
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for

MOST_WIDGETS = 15

TEXTUAL_OWN = ("textual-tooltip", "textual-toastrack")
"""Textual's own widgets on every screen (the tooltip, the notifications' rack)."""


def mounted(app: IotopPlusApp) -> list[Widget]:
    return list(app.main_screen.walk_children(Widget))


def named(widgets: list[Widget]) -> list[str]:
    return [f"{type(w).__name__}#{w.id}" for w in widgets]


def bar_lines(bar: TabBar) -> list[str]:
    return [bar.render_line(y).text for y in range(bar.size.height)]


def assert_every_tab_shown(bar: TabBar) -> None:
    """Each tab's key and name is on the bar, whole, within its width."""
    lines = bar_lines(bar)
    assert lines and all(len(line.rstrip()) <= bar.size.width for line in lines), lines
    for tab in SIDE_TABS:
        label = f"{tab.key} {tab.label}".strip()
        assert any(label in line for line in lines), (label, lines)


async def test_the_default_screen_is_at_most_15_widgets_all_of_them_shown(
    step_clock: StepClock,
) -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)  # the first frames shown, the charts and side panel up
        widgets = mounted(app)
        assert len(widgets) <= MOST_WIDGETS, named(widgets)
        hidden = [w for w in widgets if not w.display and w.id not in TEXTUAL_OWN]
        assert not hidden, named(hidden)
        screen = app.main_screen
        # The charts and their caption are one widget; the side panel is its bar and a panel.
        assert len(screen.query_one("#charts").children) == 0
        side = screen.query_one("#side-panel")
        assert [w.id for w in side.children] == ["side-tabs", "device-panel"]


async def test_a_tab_once_shown_stays_mounted_hidden_and_the_count_follows(
    step_clock: StepClock,
) -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        before = len(mounted(app))
        await pilot.press("B")
        side = app.main_screen.query_one("#side-panel", SidePanel)
        await wait_for(pilot, lambda: len(side.children) == 3, "the Blocked tab's panel")
        await pilot.press("I")
        await wait_for(pilot, lambda: side.active == "tab-device", "the Device tab")
        blocked = app.main_screen.query_one("#blocked-panel")
        assert not blocked.display
        assert app.main_screen.query_one("#device-panel").display
        assert len(mounted(app)) > before


async def test_the_side_tabs_all_show_readable_at_120x36_on_two_lines(
    step_clock: StepClock,
) -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        bar = app.main_screen.query_one("#side-tabs", TabBar)
        assert bar.size.width < 63  # too narrow for the eight tabs on one line
        assert bar.size.height == 2
        assert_every_tab_shown(bar)


async def test_the_side_tabs_all_show_on_one_line_in_the_panel_view_at_80x24(
    step_clock: StepClock,
) -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        views = screen.query_one("#view-tabs", TabBar)
        assert [line.rstrip() for line in bar_lines(views)] == [" 1 Devices  2 Charts  3 Panel"]
        await pilot.press("3")
        bar = screen.query_one("#side-tabs", TabBar)
        await wait_for(pilot, lambda: bar.size.width > 0, "the panel view")
        assert bar.size.height == 1
        assert_every_tab_shown(bar)


async def test_the_view_tabs_are_mounted_only_while_narrow(step_clock: StepClock) -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        assert not screen.query("#view-tabs")
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: bool(screen.query("#view-tabs")), "the view tabs")
        await pilot.resize_terminal(120, 36)
        await wait_for(pilot, lambda: not screen.query("#view-tabs"), "no view tabs")


async def test_a_click_on_a_tab_shows_it(step_clock: StepClock) -> None:
    app = canned_app(Config(interval=1.0))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        bar = screen.query_one("#side-tabs", TabBar)
        lines = wrap(SIDE_TABS, bar.size.width)
        y, x = next(
            (y, x) for y, line in enumerate(lines) for x, tab in line if tab.id == "tab-sync"
        )
        await pilot.click("#side-tabs", offset=(x + 2, y))
        side = screen.query_one("#side-panel", SidePanel)
        await wait_for(pilot, lambda: side.active == "tab-sync", "the Sync tab")
        assert bar.active == "tab-sync"
        await wait_for(pilot, lambda: screen.query("#sync-panel"), "the Sync panel")


def test_labels_wrap_to_the_width_and_a_wide_label_gets_a_line_of_its_own() -> None:
    lines = wrap(SIDE_TABS, 41)
    assert [[tab.label for _, tab in line] for line in lines] == [
        ["Device", "Tune", "Processes", "Cgroups"],
        ["Blocked", "Files", "Probe", "Sync"],
    ]
    assert all(x + len(tab.text) <= 41 for line in lines for x, tab in line)
    assert len(wrap(SIDE_TABS, 80)) == 1
    assert [len(line) for line in wrap(SIDE_TABS, 5)] == [1] * len(SIDE_TABS)
