"""#25: the charts and the header give Textual their own strips where their styles add nothing
(no border, padding, outline, tint, opacity or hatch), instead of a copy of each line made by
Textual's styles cache; what is painted is the same, and a style that would change the lines
sends them through Textual's path again."""

from __future__ import annotations

import pytest
from textual._styles_cache import StylesCache
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.tui.widgets.braille_chart import BrailleChart
from iotop_plus.tui.widgets.header import HostHeader
from tests.tui.helpers import step
from tests.tui.light_support import started_app


def textuals(widget: Widget, crop: Region) -> list[Strip]:
    """The lines as Textual's own path paints them (every line rendered again)."""
    widget._styles_cache.clear()
    return Widget.render_lines(widget, crop)


async def test_the_charts_and_header_paint_their_own_strips_the_same_as_textual(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with started_app(3) as (pilot, app):
        screen = app.main_screen
        widgets: list[Widget] = [*screen.query(BrailleChart), screen.query_one(HostHeader)]
        assert len(widgets) == 6
        through_cache: list[Widget] = []
        real = StylesCache.render_widget

        def render_widget(self: StylesCache, widget: Widget, crop: Region) -> list[Strip]:
            through_cache.append(widget)
            return real(self, widget, crop)

        monkeypatch.setattr(StylesCache, "render_widget", render_widget)
        await step(pilot, app, 2)
        await pilot.pause()
        assert not [w for w in through_cache if w in widgets]
        for widget in widgets:
            width, height = widget.size
            for crop in (Region(0, 0, width, height), Region(3, 1, width - 5, height - 1)):
                ours = widget.render_lines(crop)
                assert ours == textuals(widget, crop), widget
                assert all(s.cell_length == crop.width for s in ours)
        # Any braille drawn at all (the comparison is not of empty charts).
        iops = screen.query_one("#chart-iops", BrailleChart)
        lines = iops.render_lines(iops.region.reset_offset)
        assert any("⠀" < ch <= "⣿" for s in lines for ch in s.text)


async def test_a_style_that_changes_the_lines_paints_them_through_textual() -> None:
    async with started_app(3) as (pilot, app):
        chart = app.main_screen.query_one("#chart-iops", BrailleChart)
        chart.styles.padding = (0, 2)
        chart.styles.tint = "red 40%"
        await step(pilot, app)
        await pilot.pause()
        crop = chart.region.reset_offset
        painted = chart.render_lines(crop)
        assert painted == textuals(chart, crop)
        assert painted[2].text.startswith("  ")  # the padding is there
