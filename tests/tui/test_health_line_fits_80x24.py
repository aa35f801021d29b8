"""At 80x24 the Device tab shows the health line without scrolling (#26 gap 5): it came
after the settings, mounts and memory, below the panel's bottom; it now follows the verdict
and the issuers (how the device itself is doing belongs with why it is slow)."""

from __future__ import annotations

import pytest

from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for

pytestmark = pytest.mark.usefixtures("step_clock")


async def test_the_health_line_is_on_screen_at_80x24_without_scrolling() -> None:
    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await pilot.press("3")  # the panel, its Device tab first
        panel = app.main_screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "\nhealth: " in panel.text, "the health line")
        await pilot.pause()
        shown = panel.query_one("#device-facts")
        assert panel.scroll_y == 0
        # The lines drawn in the panel's height, as the terminal shows them.
        visible = [shown.render_line(y).text for y in range(panel.scrollable_content_region.height)]
        assert any(line.startswith("health ") for line in visible), visible
        # The verdict and the issuers still come first.
        assert visible[0].startswith("why ") and not visible[1].startswith("health ")
