"""#25: the lines the TUI paints are freed when dropped, not left for the cyclic collector.

Textual's Strip cached ``divide`` at its full length (``[self]``) and ``crop_extend`` onto
itself (``self``): each a cycle through the strip's own cache. The compositor divides every
painted line, so nearly every line became garbage that only a collection freed (~650 objects a
second live at 8 devices). :mod:`iotop_plus.tui.engine.strip_cycles` gives the same results without
those cache entries.
"""

from __future__ import annotations

import gc
import sys

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from iotop_plus.config import Config
from iotop_plus.tui.engine import strip_cycles
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step

pytestmark = pytest.mark.usefixtures("step_clock")

RED = Style(color="red")


def _strips() -> list[Strip]:
    return [
        Strip([Segment("abc"), Segment("de", RED)]),
        Strip([Segment("⣿⡇ x", RED), Segment("  ")]),
        Strip([Segment("日本", RED), Segment("語x")]),  # wide cells
        Strip([]),
    ]


@pytest.mark.parametrize(
    "cuts", [[0], [1], [2, 5], [5], [3, 5, 9], [9], [2, 3, 4, 5], [4, 4], [6, 7]]
)
def test_divide_gives_what_textuals_gives(cuts: list[int]) -> None:
    strip_cycles.install()
    for ours, textuals in zip(_strips(), _strips(), strict=True):
        got = ours.divide(iter(cuts))  # the compositor passes a list; any iterable works
        want = strip_cycles._DIVIDE(textuals, cuts)
        assert [list(s) for s in got] == [list(s) for s in want]
        assert [s.cell_length for s in got] == [s.cell_length for s in want]


@pytest.mark.parametrize("span", [(0, 5), (0, 3), (1, 5), (0, 9), (2, 9), (0, 0)])
def test_crop_extend_gives_what_textuals_gives(span: tuple[int, int]) -> None:
    strip_cycles.install()
    for ours, textuals in zip(_strips(), _strips(), strict=True):
        got = ours.crop_extend(*span, RED)
        want = strip_cycles._CROP_EXTEND(textuals, *span, RED)
        assert list(got) == list(want) and got.cell_length == want.cell_length


def test_a_strip_cut_at_its_length_holds_no_reference_to_itself() -> None:
    strip_cycles.install()
    for strip in _strips():
        held = sys.getrefcount(strip)
        assert strip.divide([strip.cell_length]) == [strip]
        assert strip.crop_extend(0, strip.cell_length, None) is strip
        assert sys.getrefcount(strip) == held


async def test_frames_painted_leave_no_strip_for_the_collector() -> None:
    app = canned_app(Config(interval=1.0), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await step(pilot, app, 3)
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            await step(pilot, app, 5)  # header, table rows and charts painted again
            await pilot.pause()
            gc.collect()
            strips = [o for o in gc.garbage if isinstance(o, Strip)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        assert app.frames_received >= 7
        assert strips == []
