"""The Processes tab's header gives the disks' actual writes beside the processes' total, as
iotop's "Actual DISK WRITE": the whole disks whose bytes reach hardware, named."""

from __future__ import annotations

from textual.app import ComposeResult

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.disk_writes import disk_writes
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.text import compact_bytes
from iotop_plus.tui.widgets.process_panel import ProcessPanel
from tests.support.frames import step_until
from tests.tui.test_process_panel import FeedApp


class Host(FeedApp):
    """The Processes panel on this host's frames, given each frame's disk writes as the main
    screen gives them."""

    def __init__(self) -> None:
        super().__init__()
        self.panel = ProcessPanel(Roots(), self, id="processes")
        self.frames: list[Frame] = []

    def compose(self) -> ComposeResult:
        yield self.panel

    def _frame(self, frame: Frame) -> None:
        self.frames.append(frame)
        if self.panel.sampling:
            self.panel.show_processes(frame.processes, frame.process_error, disk_writes(frame))


async def test_the_processes_header_names_the_disks_whose_writes_it_sums() -> None:
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.panel
        await step_until(
            pilot, app.clock, lambda: "actual WRITE" in panel.status_text(), "actual writes"
        )
        actual = panel.disk_writes
        assert actual is not None and actual.devices
        frame = next(f for f in reversed(app.frames) if disk_writes(f) == actual)
        kinds = {frame.inventory.devices[n].kind for n in actual.devices}
        assert not kinds & {"part", "loop", "dm", "md", "zram", "ram"}, kinds
        assert not [n for n in actual.devices if n.startswith("nbd")]
        others = {n for n, r in frame.rates.items() if r is not None} - set(actual.devices)
        assert all(
            frame.inventory.devices[n].kind != "disk" for n in others if n in frame.inventory
        )
        status = panel.status_text()
        figure = compact_bytes(actual.write_bps)
        assert f" · actual WRITE {figure}/s on {actual.names()}" in status, status
