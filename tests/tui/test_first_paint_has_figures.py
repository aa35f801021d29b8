"""#25, first figures: frames shown before the first layout (the main screen shows the frames
read while it composed from its ``on_mount``) are on the first paint with their figures.

Textual paints a new screen before the widgets have handled their first Resize event, so a
table fed at width 0 fitted no value column: its first paint showed the device names alone,
and the figures came one frame later."""

from __future__ import annotations

import re

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip

from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.tui.widgets.device_table import DeviceTable
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.tui.test_starting_device_and_busy_hidden import feed

FIGURE = re.compile(r"\d+\.\d\d")


class FedOnMount(App[None]):
    """The device table, given a frame with rates before it is laid out; the text of every
    line it paints, in order."""

    def __init__(self) -> None:
        super().__init__()
        source = LiveSource(HOST_ROOTS, CannedSampler())
        source.next_frame()
        self.frame = source.next_frame()
        self.painted: list[list[str]] = []

    def compose(self) -> ComposeResult:
        yield SpiedTable(id="table")

    def on_mount(self) -> None:
        table = self.query_one(DeviceTable)
        assert table.size.width == 0  # not laid out yet, as in the main screen's on_mount
        feed(table, self.frame)


class SpiedTable(DeviceTable):
    def render_lines(self, crop: Region) -> list[Strip]:
        strips = super().render_lines(crop)
        app = self.app
        assert isinstance(app, FedOnMount)
        app.painted.append([s.text for s in strips])
        return strips


async def test_the_first_paint_of_a_table_fed_before_layout_has_its_figures() -> None:
    app = FedOnMount()
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        assert app.painted, "the table was never painted"
        first = app.painted[0]
        assert any(line.startswith("sda") for line in first), first
        rows = [line for line in first if line[:1].isalpha() and FIGURE.search(line)]
        assert rows, f"no figures on the first paint: {first}"
        assert "r/s" in "\n".join(first[:2])  # the header has its value columns too
