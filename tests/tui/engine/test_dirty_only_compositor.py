"""#25: the main screen paints a frame by rendering only the widgets its changes touch
(:mod:`iotop_plus.tui.engine.compositor`), and what it writes on the terminal's cells is what
Textual's own compositor writes for the same changes (less the cursor moves Textual adds for
widgets hidden behind others, which write nothing). Both ways: on stock Textual the screen
paints with Textual's own compositor, which renders every widget under the changes."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.segment import ControlType, Segment
from rich.style import Style
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.config import Config
from iotop_plus.tui.engine.compositor import DirtyOnlyCompositor, rows_to_render
from iotop_plus.tui.widgets.charts import DeviceCharts
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


def written(
    update: ChopsUpdate, console: Console
) -> dict[tuple[int, int], tuple[str, Style | None]]:
    """The cells ``update`` writes on the terminal: (x, y) -> (character, style)."""
    cells: dict[tuple[int, int], tuple[str, Style | None]] = {}
    x = y = 0
    segments: list[Segment] = list(update.__rich_console__(console, console.options))  # type: ignore[arg-type]
    for segment in segments:
        if segment.control:
            for code in segment.control:
                if code[0] == ControlType.CURSOR_MOVE_TO:
                    x, y = int(code[1]), int(code[2])  # type: ignore[misc]
            continue
        if segment.text == "\n":
            continue
        for char in segment.text:
            cells[(x, y)] = (char, segment.style)
            x += cell_len(char)
    return cells


async def test_partial_updates_write_what_textual_writes_and_skip_untouched_widgets(
    engine_mode: str,
) -> None:
    stock_mode = engine_mode == "stock"
    app = canned_app(Config(interval=1.0), with_history=False)
    compared: list[int] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        compositor = screen._compositor
        assert type(compositor) is (Compositor if stock_mode else DirtyOnlyCompositor)
        real = compositor.render_partial_update

        def checked() -> ChopsUpdate | None:
            dirty = set(compositor._dirty_regions)
            before, behind = len(panel_crops), len(charts_crops)
            ours = real()
            if not any(area.overlaps(panel.region) for area in dirty):
                untouched.append(len(panel_crops) - before)
            charts_region = screen.query_one(DeviceCharts).region
            if any(area.overlaps(charts_region) for area in dirty):
                container.append(len(charts_crops) - behind)
            compositor._dirty_regions.update(dirty)
            stock = Compositor.render_partial_update(compositor)  # the whole-rectangle path
            assert (ours is None) == (stock is None)
            if ours is not None and stock is not None:
                assert ours.spans == stock.spans
                assert written(ours, app.console) == written(stock, app.console)
                compared.append(len(dirty))
            return ours

        compositor.render_partial_update = checked  # type: ignore[method-assign]
        panel_crops, undo = spy_renders(DevicePanel)
        charts_crops, undo_charts = spy_renders(DeviceCharts)
        container: list[int] = []
        """For each update that touched the charts, how often we rendered them."""
        panel = screen.query_one(DevicePanel)
        untouched: list[int] = []
        """For each update that did not touch the side panel, how often we rendered it."""
        try:
            for n in range(4):
                if n == 2:  # a change over the charts' rule and top rows, and the table's last
                    charts = screen.query_one(DeviceCharts).region
                    screen.refresh(Region(charts.x, charts.y - 1, charts.width, 4))
                await step(pilot, app)
                await pilot.pause()
        finally:
            undo()
            undo_charts()
    assert any(n >= 2 for n in compared), f"no partial update with several changes: {compared}"
    assert panel_crops, "Textual's own path no longer renders the side panel: drop this module?"
    # The charts are one widget: rendered once for an update that touches them.
    assert container and set(container) == {1}, container
    if stock_mode:  # Textual's compositor renders all under the changes' rectangle
        assert 1 in untouched, untouched
        return
    # Textual's compositor renders the side panel on every frame, since the header (row 0) and
    # the charts (the bottom rows) change; ours only when the panel changed.
    assert untouched and set(untouched) == {0}, untouched


def _reference_rows(
    region: Region, clip: Region, dirty: list[Region], rendered: list[Region]
) -> Region | None:
    """The bookkeeping as first written with Textual's ``Region`` methods: the rows of the
    shown part from its first to its last dirty one, None when no dirty part is left that a
    widget in front did not render."""
    shown = region.intersection(clip)
    touching = [area for area in dirty if shown.overlaps(area)]
    if not touching:
        return None
    top = max(min(a.y for a in touching), shown.y)
    bottom = min(max(a.bottom for a in touching), shown.bottom)
    for area in dirty:
        part = shown.intersection(area)
        if part.area and not any(r.contains_region(part) for r in rendered):
            return Region(shown.x, top, shown.width, bottom - top)
    return None


def _corners(r: Region) -> tuple[int, int, int, int]:
    return r.x, r.y, r.right, r.bottom


def test_the_integer_bookkeeping_picks_what_the_region_methods_pick() -> None:
    """``rows_to_render`` against the ``Region`` way on 20,000 random screens: widgets,
    clips, dirty areas and what was rendered in front, overlapping and at the edges."""
    rng = random.Random(25)

    def box(most: int = 40) -> Region:
        return Region(
            rng.randint(-3, 30), rng.randint(-3, 30), rng.randint(0, most), rng.randint(0, most)
        )

    picked = 0
    for _ in range(20_000):
        region, clip = box(), box(60)
        dirty = [b for b in (box(12) for _ in range(rng.randint(0, 6))) if b.area]
        rendered = [box(20) for _ in range(rng.randint(0, 4))]
        rendered = [r for r in rendered if r.area]
        want = _reference_rows(region, clip, dirty, rendered)
        got = rows_to_render(
            region, clip, [_corners(d) for d in dirty], [_corners(r) for r in rendered]
        )
        assert got == (None if want is None else _corners(want)), (region, clip, dirty, rendered)
        picked += want is not None
    assert 2_000 < picked < 18_000, picked  # both answers were checked often


def test_empty_dirty_areas_render_nothing() -> None:
    compositor = DirtyOnlyCompositor()
    assert list(compositor._renders_touching([Region(0, 0, 0, 5), Region(3, 3, 4, 0)])) == []
