"""A side-panel tab shown just before a quit: the app ends cleanly, nothing is mounted.

Showing a deferred tab (``C`` for Cgroups) sends its activation through Textual's queues:
the side panel posts it, then the screen mounts the tab's panel. A quit (``q``) that lands
between the two leaves the app exiting while the activation is still on its way; the screen
then handled it and mounted into a container no longer attached to the app, and the replay
ended with ``MountError: Can't mount widget(s) before TabPane(id='tab-cgroups') is mounted``
(once in 35 runs of scrub keys 0.25 s apart). Here the activation is put in the screen's
queue in the same step as the quit, so it is always handled after the quit began.
"""

from __future__ import annotations

import pytest

from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.screens.side_panels import DEFERRED_TABS
from iotop_plus.tui.widgets.side_panel import SidePanel
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, wait_for
from tests.tui.test_history_replay import recording


@pytest.mark.parametrize("tab", DEFERRED_TABS)
async def test_a_tab_activated_as_the_replay_quits_mounts_nothing(tab: str) -> None:
    timeline, frames = recording(30)
    app = make_replay_app(HOST_ROOTS, timeline, None)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[1])
        await parts_up(pilot, app)
        screen = app.main_screen
        await pilot.press("right_square_bracket")  # scrub, as the replay that failed did
        side = screen.query_one("#side-panel", SidePanel)
        screen.post_message(SidePanel.TabShown(side, tab))  # on its way to the screen
        app.exit()  # q: the quit begins before the screen handles it
        await pilot.pause()
    assert app.return_code == 0  # (an exception in the app is raised by run_test)
    assert screen.panels.mounted(tab) is None


async def test_a_panel_key_as_the_replay_quits_acts_on_nothing() -> None:
    """A panel's key (``o``: only cgroups doing I/O) handled after the quit began: its panel
    cannot be mounted, so the key does nothing (it acted on an unmounted panel)."""
    timeline, frames = recording(30)
    app = make_replay_app(HOST_ROOTS, timeline, None)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[1])
        await parts_up(pilot, app)
        screen = app.main_screen
        app.exit()
        await screen.panel_keys.action_panel_key("tab-cgroups", "toggle_only_active")
        await pilot.pause()
    assert app.return_code == 0
    assert screen.panels.mounted("tab-cgroups") is None
