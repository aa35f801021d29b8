"""Issue #24 items 4 and 5 in the TUI: the Device tab shows dirty/writeback memory and the
verdict line of the selected device, from the frame shown; the help explains both."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from iotop_plus.config import Config
from iotop_plus.record.collect import inventory_doc, recorded_sample
from iotop_plus.record.recorder import Recorder
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.tui.app import make_app
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.screens.help import HelpScreen
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.support.synthetic import SyntheticTree
from tests.tui.canned import FIXTURES, CannedSampler
from tests.tui.helpers import parts_up, started, wait_for
from tests.unit.test_writeback_context import write_memory

pytestmark = pytest.mark.usefixtures("step_clock")

T0 = 1_700_000_000.0


def host_with_memory(tmp_path: Path, dirty_kb: int) -> Roots:
    base = tmp_path / "host"
    shutil.copytree(FIXTURES / "tui_host", base, symlinks=True)
    # Thresholds of 100,000 and 50,000 pages: 400,000 and 200,000 kB.
    write_memory(base / "proc", dirty_kb, 2048, thresh=100000, bg=50000)
    return Roots(proc=base / "proc", sys=base / "sys")


async def test_the_device_tab_shows_memory_and_a_writeback_verdict(tmp_path: Path) -> None:
    roots = host_with_memory(tmp_path, 250000)
    sampler = CannedSampler(roots)
    app = make_app(roots, Config(interval=10.0), sampler=sampler, host=sampler.host_info())
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        panel = screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "why: " in panel.text)
        assert "memory: dirty 244.1M (bg 195.3M, max 390.6M)  writeback 2M" in panel.text
        assert "over the background threshold" in panel.text
        name = screen.selected_device
        assert name is not None
        frame = screen.shown_frame
        assert frame is not None
        rates = frame.rates[name]
        assert rates is not None and rates.w_s > 0  # the busiest device writes
        # The verdict comes first: it is the question the tab answers.
        why = panel.text.splitlines()[0]
        assert why.startswith("why: writeback storm: dirty 244 MB over the background 195 MB")
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        assert "Device tab, why" in text and "no clear cause" in text


async def test_quiet_memory_gives_no_writeback_verdict(tmp_path: Path) -> None:
    roots = host_with_memory(tmp_path, 1000)
    sampler = CannedSampler(roots)
    app = make_app(roots, Config(interval=10.0), sampler=sampler, host=sampler.host_info())
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        panel = app.main_screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "why: " in panel.text)
        [why] = [line for line in panel.text.splitlines() if line.startswith("why: ")]
        assert "writeback" not in why
        assert "over the background threshold" not in panel.text


async def test_a_replay_shows_the_recorded_memory_and_verdict_not_the_live_ones(
    tmp_path: Path,
) -> None:
    """Recorded in a writeback storm (type M); the host is quiet now: the replayed Device tab
    shows the storm."""
    tree = SyntheticTree(tmp_path / "host", 2)
    write_memory(tree.roots.proc, 300000, 4096, thresh=100000, bg=50000)  # storm
    source = LiveSource(tree.roots)
    inventory = inventory_doc(Sampler(tree.roots).inventory(), tree.roots, {})
    recorder = Recorder(tmp_path / "rec", lambda: {"host": "synthetic", "zone": "UTC", **inventory})
    try:
        for k in range(4):
            tree.advance(1.0)
            frame = source.next_frame()
            rs = recorded_sample(frame, tree.roots, 0)
            sample = dataclasses.replace(rs.sample, monotonic=500.0 + k, wall_time=T0 + k)
            recorder.write(dataclasses.replace(rs, sample=sample))
    finally:
        recorder.close()
        source.close()
    write_memory(tree.roots.proc, 1000, 0, thresh=100000, bg=50000)  # quiet now
    timeline = open_timeline(tmp_path / "rec")
    app = make_replay_app(tree.roots, timeline, T0 + 3)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = app.main_screen
            await wait_for(pilot, lambda: screen.shown_frame is not None)
            await parts_up(pilot, app)
            panel = screen.query_one(DevicePanel)
            await wait_for(pilot, lambda: "why: " in panel.text)
            assert "memory: dirty 293.0M (bg 195.3M, max 390.6M)  writeback 4M" in panel.text
            assert panel.text.splitlines()[0].startswith("why: writeback storm: dirty 292 MB")
    finally:
        timeline.close()
