"""The styles of what comes after the first paint (``later.tcss``: the charts, the side
panel's tabs, the dialogs) are read once, whichever comes first: the charts and the side
panel, or a dialog pushed before them. Either way what they style is styled by them."""

from __future__ import annotations

import pytest
from textual.containers import VerticalScroll
from textual.geometry import Spacing

from iotop_plus.config import Config
from iotop_plus.tui.screens.help import HelpScreen
from iotop_plus.tui.screens.later_parts import LaterParts
from iotop_plus.tui.screens.modal import LATER_CSS
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.support.wait import wait_for
from tests.tui.canned import canned_app
from tests.tui.helpers import started

pytestmark = pytest.mark.usefixtures("step_clock")


def later_sources(app: object) -> list[tuple[str, str]]:
    """The stylesheet's sources read from later.tcss (one when it was read once)."""
    sheet = app.stylesheet  # type: ignore[attr-defined]
    return [key for key in sheet.source if key[0] == LATER_CSS]


async def test_the_side_panel_mounted_after_the_first_paint_is_styled_by_later_css() -> None:
    app = canned_app(Config(interval=1.0), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)  # the charts and the side panel are up
        assert later_sources(app) == [(LATER_CSS, "")]
        panel = app.main_screen.query_one(DevicePanel)
        assert panel.styles.padding == Spacing(0, 1, 0, 1)  # later.tcss: DevicePanel


async def test_a_dialog_before_the_side_panel_reads_later_css_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parked: list[LaterParts] = []
    monkeypatch.setattr(LaterParts, "after_first_paint", lambda self: parked.append(self))
    app = canned_app(Config(interval=1.0), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app, parts=False)
        assert parked and not later_sources(app)  # the first screen without it
        await app.push_screen(HelpScreen())
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help dialog")
        box = app.screen.query_one(VerticalScroll)
        assert box.styles.border_top[0] == "round"  # later.tcss: HelpScreen > VerticalScroll
        app.pop_screen()
        await parked[0].mount()  # the charts and the side panel come now
        await wait_for(pilot, lambda: parked[0].mounted, "the charts and the side panel")
        assert later_sources(app) == [(LATER_CSS, "")]  # not read a second time
        panel = app.main_screen.query_one(DevicePanel)
        assert panel.styles.padding == Spacing(0, 1, 0, 1)
