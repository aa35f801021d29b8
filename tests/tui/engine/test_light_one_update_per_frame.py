"""#25: a frame's repaints reach the screen at once (``refresh_batch``), not each widget
through its own message queue, and anything but a plain repaint still goes Textual's way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from textual import messages
from textual._compositor import Compositor
from textual.message import Message
from textual.widget import Widget

from iotop_plus.tui.engine.refresh_batch import one_update
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.device_table import DeviceTable
from tests.tui.helpers import parts_up, step
from tests.tui.light_support import started_app


@contextmanager
def posted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Widget, Message]]]:
    """Every (widget, message) posted to a widget (the screen too) while the block runs."""
    seen: list[tuple[Widget, Message]] = []
    original = Widget.post_message

    def spy(self: Widget, message: Message) -> bool:
        seen.append((self, message))
        return original(self, message)

    with monkeypatch.context() as patch:
        patch.setattr(Widget, "post_message", spy)
        yield seen


async def test_a_frames_repaints_reach_the_screen_without_a_message_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with started_app(2) as (pilot, app):
        await parts_up(pilot, app)
        await step(pilot, app)
        await pilot.pause()
        updated: list[set[Widget]] = []
        original = Compositor.update_widgets

        def spy(self: Compositor, widgets: set[Widget]) -> None:
            updated.append(set(widgets))
            original(self, widgets)

        monkeypatch.setattr(Compositor, "update_widgets", spy)
        charts = app.main_screen.query_one("#charts", DeviceCharts)
        draws = charts.draws
        with posted(monkeypatch) as seen:
            await step(pilot, app, 3)
            await pilot.pause()
        assert charts.draws == draws + 3
        painted = set().union(*updated)
        # the clock moved and new points came (the canned host's figures stay): all painted
        names = {type(w).__name__ for w in painted}
        assert {"DeviceCharts", "HostHeader"} <= names, names
        prompted = {type(w).__name__ for w, m in seen if isinstance(m, messages.Prompt)}
        assert not prompted & {"DeviceCharts", "HostHeader"}, prompted
        # (the Device tab's facts may ask for a layout when a value wraps to more lines)
        updates = {type(m.widget).__name__ for _, m in seen if isinstance(m, messages.Update)}
        assert not updates & {"DeviceCharts", "HostHeader"}, updates


async def test_a_layout_or_a_widget_not_mixed_in_goes_textuals_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with started_app(2) as (pilot, app):
        await parts_up(pilot, app)
        screen = app.main_screen
        chart = screen.query_one("#charts", DeviceCharts)
        table = screen.query_one(DeviceTable)
        facts = screen.query_one("#device-facts")
        panel = screen.query_one("#device-panel")
        await pilot.pause()
        with posted(monkeypatch) as seen:
            with one_update(screen):
                chart.refresh()  # a repaint: handed over
                table.refresh(layout=True)  # a layout: its own idle handler does it
                facts.refresh()  # mixed in: handed over
                panel.refresh()  # not mixed in (a container): Textual's way at once
                assert not [w for w, _ in seen if w is not panel]
            assert chart in screen._dirty_widgets and facts in screen._dirty_widgets
            assert table not in screen._dirty_widgets
            prompted = {w for w, m in seen if isinstance(m, messages.Prompt)}
            assert {table, panel, screen} <= prompted
            assert chart not in prompted and facts not in prompted
            await pilot.pause()
        assert not table._layout_required  # its idle handler ran
        assert screen._dirty_widgets == set()  # and the screen painted them all


async def test_a_screen_without_textuals_parts_takes_every_repaint_its_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with started_app(2) as (pilot, app):
        await parts_up(pilot, app)
        chart = app.main_screen.query_one("#charts", DeviceCharts)
        await pilot.pause()
        with posted(monkeypatch) as seen, one_update(object()):
            chart.refresh()
            assert [(w, type(m)) for w, m in seen] == [(chart, messages.Prompt)]
