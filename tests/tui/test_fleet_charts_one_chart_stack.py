"""The fleet's charts are drawn by the device charts' braille widget (#23 item 5, one chart
stack): before, the fleet drew its hour with plotext, a second chart stack beside
:class:`~iotop_plus.tui.widgets.braille_chart.BrailleChart`, with its own down-sampling."""

from __future__ import annotations

from iotop_plus.export.fleet import HISTORY_QUERIES, PrometheusClient
from iotop_plus.tui.fleet.app import FleetApp
from iotop_plus.tui.widgets.braille_chart import BrailleChart
from tests.support.fake_prometheus import fake_prometheus, series_answer
from tests.support.wait import wait_for

BRAILLE = range(0x2801, 0x2900)
"""Braille characters with at least one dot."""


async def test_the_fleet_history_is_drawn_by_the_braille_chart() -> None:
    labels = [{"instance": "a", "device": "calm"}, {"instance": "b", "device": "hot"}]
    with fake_prometheus(series_answer(labels, ["1", "40"])) as prom:
        app = FleetApp(PrometheusClient(prom.url, timeout=5), refresh_s=60)
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_for(pilot, lambda: app.rounds >= 1 and app.histories >= 1)
            await pilot.pause()
            for key in HISTORY_QUERIES:
                chart = app.query_one(f"#fleet-chart-{key}", BrailleChart)
                width, height = chart.size.width, chart.size.height
                drawn = [strip.text for strip in chart.build(width, height)]
                dots = [ch for line in drawn for ch in line if ord(ch) in BRAILLE]
                assert dots, (key, drawn)
                # The y axis reaches the larger series (40) and the x axis is the last hour.
                assert float(chart.ticks[-1].replace(",", "")) >= 40, (key, chart.ticks)
                assert any("-30m" in line or "-15m" in line for line in drawn), (key, drawn)
