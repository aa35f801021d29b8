"""Pressure in the header: I/O some/full with a trend and a colour, at 80 and 120 columns."""

from __future__ import annotations

import dataclasses

from iotop_plus.sampling.pressure import Pressure, parse_pressure
from iotop_plus.tui.screens.help import help_text
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.pressure import PressureGauge, gauge_text, level, trend
from tests.tui.canned import canned_app
from tests.tui.helpers import started

HIGH = (
    "some avg10=55.00 avg60=60.00 avg300=50.00 total=9\n"
    "full avg10=25.00 avg60=20.00 avg300=1.00 total=8\n"
)


async def test_at_80_columns_io_pressure_fits_beside_the_header() -> None:
    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        gauge = app.main_screen.query_one(PressureGauge)
        # tui_host's /proc/pressure/io: some 12.5 (avg60 4.2: rising), full 2.1.
        assert gauge.text == "IO 12.5/2.1% ↑"
        assert gauge.has_class("psi-warn") and not gauge.has_class("psi-ok")
        region = gauge.region
        assert region.y == 0 and region.right <= 80 and region.width == len(gauge.text) + 2
        header = app.main_screen.query_one(HostHeader)
        assert header.region.right <= region.x  # side by side, the header gives way


async def test_wide_screens_show_memory_and_cpu_too() -> None:
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        gauge = app.main_screen.query_one(PressureGauge)
        assert gauge.text == "IO some 12.5% full 2.1% ↑  mem 0.0%  cpu 3.4%"
        assert "iotop-plus db-primary-07" in app.main_screen.query_one(HostHeader).text


async def test_a_host_without_psi_says_so_and_a_frame_without_pressure_hides_it() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        frame = app.latest_frame
        assert frame is not None
        missing = Pressure({}, "no pressure (PSI) figures: /proc/pressure/io is missing")
        app.main_screen.shown = Shown(dataclasses.replace(frame, pressure=missing))
        gauge = app.main_screen.query_one(PressureGauge)
        assert gauge.text == "no PSI" and gauge.has_class("psi-missing")
        assert gauge.tooltip == missing.problem
        app.main_screen.shown = Shown(dataclasses.replace(frame, pressure=None))
        await pilot.pause()
        assert not gauge.display or not gauge.has_class("shown")


def test_levels_trends_and_the_help() -> None:
    high = Pressure({"io": parse_pressure(HIGH)})
    assert level(high) == "psi-high"
    assert trend(parse_pressure(HIGH).some) == "↓"
    assert gauge_text(high, 80) == "IO 55.0/25.0% ↓"
    calm = parse_pressure("some avg10=0.50 avg60=0.00 avg300=0.00 total=1\n")
    assert trend(calm.some) == "→" and level(Pressure({"io": calm})) == "psi-ok"
    text = help_text()
    assert "some = % of the last 10 s" in text and "%iowait" in text and "psi=0" in text
