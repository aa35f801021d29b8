"""The Probe tab asks once before a read probe on a device in use, naming the mount and the
IOPS (#22 item 11); n starts nothing, y runs the probe."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from iotop_plus.tui.widgets.probe_panel import BusyDeviceScreen, ProbePanel
from tests.support.mounts import unmount
from tests.tui.test_probe_panel import ProbeHost, _fill, _text, _wait_for

pytestmark = [pytest.mark.slow, pytest.mark.root]


async def test_a_read_probe_on_a_mounted_device_asks_once_naming_the_mount_and_iops(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True, capture_output=True)
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        app = ProbeHost(fio_bin)
        async with app.run_test(size=(80, 60)) as pilot:
            panel = app.query_one(ProbePanel)
            assert panel.preset.name == "randread"
            await _fill(pilot, app, "#probe-param-runtime", "1")
            await _fill(pilot, app, "#probe-target", f"/dev/{dev}")
            app.query_one("#probe-target", Input).focus()
            await pilot.press("enter")
            await _wait_for(pilot, lambda: isinstance(app.screen, BusyDeviceScreen))
            note = str(app.screen.query_one("#busy-note", Static).content)
            assert note.startswith(f"/dev/{dev} is in use (mounted on {mnt}; ")
            assert " IOPS measured over 1 s)" in note  # no frames here: 1 s measured
            await pilot.press("n")
            await _wait_for(pilot, lambda: "not started" in _text(app, "#probe-error"))
            assert len(panel.history) == 0 and not panel.running
            app.query_one("#probe-presets", OptionList).focus()
            await pilot.press("enter")
            await _wait_for(pilot, lambda: isinstance(app.screen, BusyDeviceScreen))
            await pilot.press("y")
            await _wait_for(pilot, lambda: len(panel.history) == 1)
            assert not isinstance(app.screen, BusyDeviceScreen)  # asked once, not per second
    finally:
        unmount(str(mnt))
