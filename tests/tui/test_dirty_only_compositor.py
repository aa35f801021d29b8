"""#25: the main screen paints a frame by rendering only the widgets its changes touch
(:mod:`iotop_plus.tui.compositor`), and what it writes to the terminal is what Textual's own
compositor writes for the same changes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.config import Config
from iotop_plus.tui.compositor import DirtyOnlyCompositor
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step

pytestmark = pytest.mark.usefixtures("step_clock")


def spy_renders(widget_type: type[Widget]) -> tuple[list[Region], Callable[[], None]]:
    """Record the crop of every ``render_lines`` of ``widget_type``; returns the list and an
    undo."""
    crops: list[Region] = []
    real = widget_type.render_lines

    def render_lines(self: Widget, crop: Region) -> list[Strip]:
        crops.append(crop)
        return real(self, crop)

    widget_type.render_lines = render_lines  # type: ignore[method-assign]
    return crops, lambda: setattr(widget_type, "render_lines", real)


async def test_partial_updates_write_what_textual_writes_and_skip_untouched_widgets() -> None:
    app = canned_app(Config(interval=1.0), with_history=False)
    compared: list[int] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        compositor = screen._compositor
        assert isinstance(compositor, DirtyOnlyCompositor)
        real = compositor.render_partial_update

        def checked() -> ChopsUpdate | None:
            dirty = set(compositor._dirty_regions)
            before = len(panel_crops)
            ours = real()
            if not any(area.overlaps(panel.region) for area in dirty):
                untouched.append(len(panel_crops) - before)
            compositor._dirty_regions.update(dirty)
            stock = Compositor.render_partial_update(compositor)  # the whole-rectangle path
            assert (ours is None) == (stock is None)
            if ours is not None and stock is not None:
                assert ours.spans == stock.spans
                assert ours.render_segments(app.console) == stock.render_segments(app.console)
                compared.append(len(dirty))
            return ours

        compositor.render_partial_update = checked  # type: ignore[method-assign]
        panel_crops, undo = spy_renders(DevicePanel)
        panel = screen.query_one(DevicePanel)
        untouched: list[int] = []
        """For each update that did not touch the side panel, how often we rendered it."""
        try:
            for _ in range(4):
                await step(pilot, app)
                await pilot.pause()
        finally:
            undo()
    assert any(n >= 2 for n in compared), f"no partial update with several changes: {compared}"
    # Textual's compositor renders the side panel on every frame, since the header (row 0) and
    # the charts (the bottom rows) change; ours only when the panel changed.
    assert untouched and set(untouched) == {0}, untouched
    assert panel_crops, "Textual's own path no longer renders the side panel: drop this module?"
