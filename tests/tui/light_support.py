"""The set-ups the #25 tests share (a frame draws only what changed): the canned app started,
the device table alone fed one canned frame, the Device tab with its facts cut to one memory
line the test writes, and spies on the rich texts wrapped and the facts' strips made."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.segment import Segment
from rich.text import Text
from textual.pilot import Pilot
from textual.strip import Strip

from iotop_plus.config import Config
from iotop_plus.devices.settings import SettingValue
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.topology.inventory import BlockDevice
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.widgets import device_panel
from iotop_plus.tui.widgets.device_table import DeviceTable
from tests.support.wait import wait_for
from tests.tui.canned import CannedSampler, canned_app
from tests.tui.helpers import started, step
from tests.tui.test_starting_device_and_busy_hidden import TableAlone, feed, host_copy


@asynccontextmanager
async def started_app(
    frames: int = 0, *, with_history: bool = True
) -> AsyncIterator[tuple[Pilot[int], IotopPlusApp]]:
    """The canned app at 120x36 on a 1 s interval (stepped clock), started, then ``frames``
    more frames stepped."""
    app = canned_app(Config(interval=1), with_history=with_history)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        if frames:
            await step(pilot, app, frames)
        await pilot.pause()
        yield pilot, app


@asynccontextmanager
async def table_alone(
    tmp_path: Path, *, loop0: str | None = None
) -> AsyncIterator[tuple[Pilot[None], DeviceTable, Frame]]:
    """The device table alone at 120x20, fed the canned host's first frame with rates (loop0's
    next counters replaced by ``loop0`` when given); yields it and that frame."""
    roots = host_copy(tmp_path, loop0=loop0)
    source = LiveSource(roots, CannedSampler(roots))
    source.next_frame()
    frame = source.next_frame()
    app = TableAlone()
    async with app.run_test(size=(120, 20)) as pilot:
        t = app.query_one(DeviceTable)
        feed(t, frame)
        await pilot.pause()
        yield pilot, t, frame


@dataclass
class MemoryFact:
    """The Device tab of the started app, its ``why`` facts cut to one memory line."""

    panel: device_panel.DevicePanel
    """The Device tab's panel."""
    dev: BlockDevice
    """The device it shows."""
    settings: tuple[SettingValue, ...] | None
    """Its queue settings, as the panel held them at the start."""
    frame: Frame | None
    """The frame shown at the start (every ``show`` shows it again)."""
    memory: str
    """The memory line's text."""

    def show(self, memory: str) -> None:
        """Show the same device and frame again, the memory line now reading ``memory``."""
        self.memory = memory
        self.panel.show(self.dev, self.settings, self.frame)


@asynccontextmanager
async def memory_fact(
    monkeypatch: pytest.MonkeyPatch, memory: str
) -> AsyncIterator[tuple[Pilot[int], MemoryFact]]:
    """The started app's Device tab showing the memory line ``memory`` (painted), once the
    queue settings are read (in a worker: arriving later, they would repaint their own lines
    between two ``show``s, 1 run in 20), so that a ``show`` changes nothing but that line."""
    async with started_app() as (pilot, app):
        panel = app.main_screen.query_one(device_panel.DevicePanel)
        await wait_for(
            pilot,
            lambda: panel.settings is not None and "…" not in panel.text,
            "the settings read",
        )
        dev = panel.device
        assert dev is not None
        fact = MemoryFact(panel, dev, panel.settings, app.main_screen.shown_frame, memory)
        monkeypatch.setattr(device_panel, "why_facts", lambda *_: [("memory", fact.memory)])
        fact.show(memory)
        await pilot.pause()
        yield pilot, fact


@contextmanager
def texts_through(monkeypatch: pytest.MonkeyPatch, method: str) -> Iterator[list[str]]:
    """The plain text of every rich ``Text`` whose ``method`` (``"render"``, ``"wrap"``) is
    called while the block runs."""
    texts: list[str] = []
    original = getattr(Text, method)

    def spy(self: Text, *args: object, **kwargs: object) -> object:
        texts.append(self.plain)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Text, method, spy)
    try:
        yield texts
    finally:
        monkeypatch.setattr(Text, method, original)


@contextmanager
def fact_strips_made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The text of every strip the Device tab's facts make while the block runs."""
    made: list[str] = []

    class CountedStrip(Strip):
        def __init__(self, segments: Iterable[Segment], cell_length: int | None = None) -> None:
            segments = list(segments)
            made.append("".join(segment.text for segment in segments))
            super().__init__(segments, cell_length)

    with monkeypatch.context() as patch:
        patch.setattr(device_panel, "Strip", CountedStrip)
        yield made
