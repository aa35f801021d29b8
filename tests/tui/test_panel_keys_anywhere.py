"""#17 items 4 and 15: a side-panel tab's keys work from anywhere while the tab is shown, the
footer lists them, and the command palette reaches every panel action."""

from __future__ import annotations

import functools

from textual.widgets import Input

from iotop_plus.tui.keys import screen_clashes
from iotop_plus.tui.screens.side_panels import DEFERRED_TABS
from iotop_plus.tui.widgets.key_hints import KeyHints
from tests.tui.canned import canned_app
from tests.tui.helpers import started, table, wait_for


def footer(app: object) -> str:
    return str(app.main_screen.query_one(KeyHints).render())  # type: ignore[attr-defined]


async def test_keys_depend_on_focus_panel_keys_work_from_the_device_table() -> None:
    """ "press D" failed from the default focus: o/t/f, A/E, x/d needed Tab into the panel."""
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        assert table(app).has_focus
        await pilot.press("p")  # the Processes tab; the focus stays in the table
        await pilot.pause()
        assert table(app).has_focus
        panel = screen.panels.process_panel
        assert not panel.only_active and not panel.totals_mode
        hints = footer(app)
        assert "Only I/O" in hints and "Totals" in hints and "Delay acct" in hints, hints
        await pilot.press("o", "t")
        assert panel.only_active and panel.totals_mode
        await pilot.press("f")  # opens the process filter, with the focus in it
        box = panel.query_one("#process-filter", Input)
        assert box.has_focus
        await pilot.press("s", "q", "l")  # typed into the box, not run as keys
        assert box.value == "sql" and app.is_running
        await pilot.press("escape")

        await pilot.press("R")  # the Tune tab (R opens the picker: close it)
        await pilot.pause()
        await pilot.press("escape")
        table(app).focus()
        await pilot.pause()
        tune = screen.panels.settings_panel
        advanced = tune.advanced
        assert "Advanced" in footer(app) and "Export" in footer(app)
        await pilot.press("A")
        assert tune.advanced is not advanced

        await pilot.press("P")
        table(app).focus()
        await pilot.pause()
        assert "Probe device" in footer(app) and "Processes" not in footer(app)
        await pilot.press("d")
        target = screen.panels.probe_panel.query_one("#probe-target", Input).value
        assert target == f"/dev/{screen.selected_device}"
        # The Processes panel's keys do nothing while its tab is hidden.
        await pilot.press("o")
        assert panel.only_active

        await pilot.press("C")
        table(app).focus()
        await pilot.pause()
        cgroups = screen.panels.panel("tab-cgroups")
        before = cgroups.only_active
        await pilot.press("o")
        assert cgroups.only_active is not before
        assert panel.only_active  # the same key, the shown tab's panel only


async def test_panel_keys_from_anywhere_make_no_key_clash() -> None:
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        for tab in DEFERRED_TABS:
            await screen.panels.ready(tab)
        await pilot.pause()
        assert screen_clashes(screen) == []


async def test_the_palette_lacks_export_advanced_delay_acct_probe_and_process_keys() -> None:
    """Every key action of every panel is in the palette, and choosing it shows its tab."""
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in (
            "Tune: export changes",
            "Tune: advanced settings",
            "Processes: delay accounting",
            "Processes: only those doing I/O",
            "Processes: totals / rates",
            "Processes: find",
            "Processes: invert sort",
            "Processes: threads and open files",
            "Processes: sort by next column",
            "Cgroups: only those doing I/O",
            "Cgroups: list its processes",
            "Probe: start",
            "Probe: cancel",
            "Probe: target the selected device",
        ):
            assert title in commands, title
        # Every panel binding of every tab has a palette entry.
        actions = {c.callback for c in commands.values()}
        assert len(actions) == len(commands)
        titles = " | ".join(commands)
        for tab in DEFERRED_TABS:
            await screen.panels.ready(tab)
        from iotop_plus.tui.keys import PANEL_KEYS, PANEL_PALETTE, own_bindings

        listed = {(c.tab, c.action.split("'")[3]) for c in (*PANEL_KEYS, *PANEL_PALETTE)}
        for tab in DEFERRED_TABS:
            for binding in own_bindings(screen.panels.panel(tab)):
                if binding.action.startswith(("cursor", "page", "edge", "edit", "undo", "revert")):
                    continue  # list moves; R S u U are the screen's own commands
                assert (tab, binding.action) in listed, (tab, binding.action, titles)

        await commands["Processes: totals / rates"].callback()
        await pilot.pause()
        side = screen.query_one("#side-panel")
        assert side.active == "tab-processes"  # type: ignore[attr-defined]
        assert screen.panels.process_panel.totals_mode
        await commands["Tune: advanced settings"].callback()
        await wait_for(pilot, lambda: screen.panels.settings_panel.advanced)
        assert side.active == "tab-tune"  # type: ignore[attr-defined]


def test_a_tab_limited_screen_key_clashes_only_with_widgets_outside_that_tab() -> None:
    from textual.binding import Binding

    from iotop_plus.tui.keys import find_clashes, panel_id

    screen = {"screen": [Binding("o", "panel_key('a', 'only')", "", id=panel_id("a", "only"))]}
    other_tab = {"Other": [Binding("o", "other", "")]}
    assert find_clashes(screen, other_tab, {"Other": ("side", "b")}) == []
    same_tab = find_clashes(screen, other_tab, {"Other": ("side", "a")})
    outside = find_clashes(screen, {"Table": [Binding("o", "other", "")]}, {})
    assert len(same_tab) == 1 and len(outside) == 1


async def test_I_returns_to_the_device_tab_from_any_other() -> None:
    from iotop_plus.tui.widgets.side_panel import SidePanel

    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        tabs = app.main_screen.query_one(SidePanel)
        for key, pane in (
            ("p", "tab-processes"),
            ("C", "tab-cgroups"),
            ("B", "tab-blocked"),
            ("F", "tab-files"),
            ("P", "tab-probe"),
            ("Y", "tab-sync"),
        ):
            await pilot.press(key)
            await wait_for(pilot, functools.partial(lambda p: tabs.active == p, pane), pane)
            table(app).focus()
            await pilot.press("I")
            await wait_for(pilot, lambda: tabs.active == "tab-device", "the Device tab")


async def test_enter_on_the_probe_tab_starts_the_highlighted_preset_at_once() -> None:
    from textual.widgets import OptionList

    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        assert table(app).has_focus
        await pilot.press("P")
        panel = app.main_screen.panels.probe_panel
        presets = panel.query_one("#probe-presets", OptionList)
        await wait_for(pilot, lambda: presets.has_focus, "the preset list focused")
        started_with: list[bool] = []
        panel.action_start = lambda: started_with.append(True)  # type: ignore[method-assign]
        await pilot.press("enter")
        await wait_for(pilot, lambda: started_with == [True], "Enter to start the probe")
