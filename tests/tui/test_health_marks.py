"""The device table's health mark (#26): a '!' before the name of a device with I/O errors,
and the Device column widens for it rather than cutting the name."""

from __future__ import annotations

import dataclasses

from iotop_plus.sampling.health.part import HealthFrame
from iotop_plus.tui.shown import Shown
from tests.support.frames import StepClock
from tests.tui.canned import canned_app
from tests.tui.helpers import row_line, started, step, table


async def test_a_device_with_io_errors_is_marked_and_its_name_stays_whole(
    step_clock: StepClock,
) -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        widest = max(t.rows, key=lambda r: len(r.label))
        frame = app.main_screen.shown_frame
        assert frame is not None
        health = HealthFrame({}, {}, {widest.name: 2}, "kmsg")
        t.show_shown(Shown(dataclasses.replace(frame, parts={"health": health})))
        await step(pilot, app)  # the next frame's rows carry the mark
        t.show_shown(Shown(dataclasses.replace(frame, parts={"health": health})))
        await pilot.pause()
        assert t.marks == {widest.name: "≥ 2 I/O errors since start"}  # kmsg: a lower bound
        assert row_line(app, widest.name).startswith(f"!{widest.label} ")
