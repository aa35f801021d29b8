"""The main screen's compositor renders only the changed lines' bands (tui/line_compositor.py),
and what it sends the terminal is what Textual's own compositor would have sent."""

from __future__ import annotations

from textual._compositor import ChopsUpdate, Compositor
from textual.strip import Strip

from iotop_plus.tui.line_compositor import LineCompositor, line_compositor
from tests.tui.helpers import step
from tests.tui.light_support import started_app


def span_of(update: ChopsUpdate, y: int, x1: int, x2: int) -> Strip:
    """What ``update`` sends for cells ``x1``..``x2`` of line ``y``."""
    parts = [
        (cut, strip)
        for cut, strip in sorted(update.chops[y].items())
        if strip is not None and cut < x2 and cut + strip.cell_length > x1
    ]
    assert parts, f"line {y} not rendered"
    first = parts[0][0]
    return Strip.join([strip for _, strip in parts]).crop(x1 - first, x2 - first)


async def test_each_partial_update_sends_what_textuals_own_would_send() -> None:
    async with started_app() as (pilot, app):
        assert isinstance(app.main_screen._compositor, LineCompositor)
        pairs: list[tuple[ChopsUpdate, ChopsUpdate]] = []
        partial = LineCompositor.render_partial_update

        def both(self: LineCompositor) -> ChopsUpdate | None:
            dirty = set(self._dirty_regions)
            textuals = Compositor.render_partial_update(self)  # its crop, every line in it
            self._dirty_regions = dirty
            update = partial(self)
            if update is not None:
                assert textuals is not None
                pairs.append((update, textuals))
            return update

        LineCompositor.render_partial_update = both  # type: ignore[method-assign]
        try:
            await step(pilot, app, 6)
            await pilot.press("down")  # another device: the charts and the Device tab redraw
            await step(pilot, app, 3)
            await pilot.pause()
        finally:
            LineCompositor.render_partial_update = partial  # type: ignore[method-assign]
        assert len(pairs) >= 6
        sent = 0
        for update, textuals in pairs:
            assert update.spans == textuals.spans
            for y, x1, x2 in update.spans:
                ours, theirs = span_of(update, y, x1, x2), span_of(textuals, y, x1, x2)
                assert ours.text == theirs.text, y
                assert list(ours) == list(theirs), y  # the styles too
                sent += 1
        assert sent > 20


async def test_a_partial_update_renders_fewer_lines_than_textuals() -> None:
    async with started_app() as (pilot, app):
        rendered: list[int] = []
        real = LineCompositor._get_renders

        def counted(self: Compositor, crop: object = None) -> object:
            for region, clip, strips in real(self, crop):  # type: ignore[arg-type]
                rendered.append(len(strips))
                yield region, clip, strips

        LineCompositor._get_renders = counted  # type: ignore[assignment,method-assign]
        try:
            await step(pilot, app, 3)
            await pilot.pause()
        finally:
            LineCompositor._get_renders = real  # type: ignore[method-assign]
        # Textual's partial update renders every line of every widget in the rectangle around
        # the changes: the whole 36-line screen, about 380 lines a frame here.
        assert 0 < sum(rendered) / 3 < 250


def test_another_textual_compositor_is_left_alone() -> None:
    class Other(Compositor):
        def render_partial_update(self, extra: int = 0) -> ChopsUpdate | None:
            return None

    assert isinstance(line_compositor(), LineCompositor)
    import iotop_plus.tui.line_compositor as module

    real = module.Compositor
    module.Compositor = Other  # type: ignore[misc]
    try:
        assert line_compositor() is None
    finally:
        module.Compositor = real  # type: ignore[misc]
