"""Issue #24 items 4 and 5 in the TUI: the Device tab shows dirty/writeback memory and the
verdict line of the selected device, from the frame shown; the help explains both."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.tui.app import make_app
from iotop_plus.tui.screens.help import HelpScreen
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.tui.canned import FIXTURES, CannedSampler
from tests.tui.helpers import started, wait_for
from tests.unit.test_writeback_context import write_memory

pytestmark = pytest.mark.usefixtures("step_clock")


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
