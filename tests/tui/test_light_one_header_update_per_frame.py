"""#25: a frame updates the header once (its text composed once), not once per figure."""

from __future__ import annotations

import pytest

from iotop_plus.tui.widgets.header import HostHeader
from tests.support.frames import StepClock
from tests.tui.helpers import step
from tests.tui.light_support import started_app


async def test_a_frame_composes_the_header_once(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with started_app(2) as (pilot, app):
        assert app.host.uptime_s is not None  # the uptime is one of the header's figures
        composed = [0]
        original = HostHeader._compose_text

        def counting(self: HostHeader) -> object:
            composed[0] += 1
            return original(self)

        monkeypatch.setattr(HostHeader, "_compose_text", counting)
        before = app.main_screen.shown_frame
        await step(pilot, app, 3)
        await pilot.pause()
        assert app.main_screen.shown_frame is not before
        assert composed[0] == 3  # one per frame
