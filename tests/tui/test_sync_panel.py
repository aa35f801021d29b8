"""Key ``Y`` opens the Sync tab: while it shows, frames carry the sync and jbd2 parts; it tells
the selected device's syncs, and says so when a frame has none."""

from __future__ import annotations

from typing import Protocol, cast

from textual.widgets import Static

from iotop_plus.tui.sync_lines import NOT_YET
from iotop_plus.tui.widgets.side_panel import SidePanel
from iotop_plus.tui.widgets.sync_panel import SyncPanel
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for


class Wants(Protocol):
    def wants(self, part: str) -> bool: ...


async def test_capital_y_opens_the_sync_tab_and_asks_for_the_parts() -> None:
    app = canned_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await started(pilot, app)
        source = cast("Wants", app.source)
        assert not source.wants("sync")  # nobody pays for the probes until the tab shows
        await pilot.press("Y")
        await wait_for(pilot, lambda: bool(app.main_screen.query(SyncPanel)))
        side = app.main_screen.query_one("#side-panel", SidePanel)
        assert side.active == "tab-sync"
        panel = app.main_screen.query_one(SyncPanel)
        await wait_for(pilot, lambda: panel.sampling)
        assert source.wants("sync") and source.wants("jbd2")
        assert app.feed.thread is not None
        app.feed.thread.sample_now()
        text = app.main_screen.query_one("#sync-text", Static)
        # a captured tree has no syncs to trace: the frame says where they are read
        await wait_for(pilot, lambda: NOT_YET in str(text.render()))
        await pilot.press("I")
        await wait_for(pilot, lambda: not panel.sampling)
        assert not source.wants("sync")
