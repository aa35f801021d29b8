"""In the TUI, "device in use" is judged by the frames the app already has (#22 item 11): the
last 5 s of the device's r/s + w/s from the history ring, so the question comes at once.

Before, the Probe tab measured the device for 1 s after Enter, like the headless command: a
device that the frames showed busy a moment ago but that paused for that second was probed
without a word (and every start waited a second).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest
from textual.widgets import Input, OptionList, Static

from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.tui.widgets.probe_panel import BusyDeviceScreen, ProbePanel, recent_iops
from tests.support.wait import holds_within
from tests.tui.test_probe_panel import ProbeHost, _fill, _text, _wait_for

pytestmark = [pytest.mark.slow, pytest.mark.root]


class FramesHost(ProbeHost):
    """The panel in an app that keeps a store of frames, as the real app does."""

    def __init__(self, fio: str, store: FrameStore) -> None:
        super().__init__(fio)
        self.store = store


def _frames_while(store: FrameStore, work: subprocess.Popen[bytes], seconds: float) -> None:
    """Real frames of every device, one each 0.5 s or more, into ``store`` until they cover
    ``seconds``, as the app's feed does; then ``work`` is stopped."""
    source = live_source(Roots())
    first = prev = source.next_frame()
    store.append(first)

    def covered() -> bool:
        nonlocal prev
        if time.monotonic() - prev.monotonic >= 0.5:
            prev = source.next_frame()
            store.append(prev)
        return prev.monotonic - first.monotonic >= seconds

    try:
        assert holds_within(covered, seconds + 10), f"no {seconds} s of frames"
    finally:
        source.close()
    os.killpg(work.pid, signal.SIGKILL)
    work.wait()


async def test_a_device_busy_in_the_last_5_s_of_frames_is_asked_about_and_an_idle_one_is_not(
    make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    reader = subprocess.Popen(
        ["sh", "-c", f"while :; do dd if=/dev/{dev} of=/dev/null bs=4k count=2000 "
         "iflag=direct status=none; done"],
        start_new_session=True,
    )  # fmt: skip
    store = FrameStore()
    _frames_while(store, reader, 2.5)  # the reader has stopped: the device is idle now
    known = recent_iops(store, dev)
    assert known is not None and known[0] >= 50
    app = FramesHost(fio_bin, store)
    async with app.run_test(size=(80, 60)) as pilot:
        panel = app.query_one(ProbePanel)
        await _fill(pilot, app, "#probe-param-runtime", "1")
        await _fill(pilot, app, "#probe-target", f"/dev/{dev}")
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: isinstance(app.screen, BusyDeviceScreen), timeout=10)
        note = str(app.screen.query_one("#busy-note", Static).content)
        assert note.startswith(f"/dev/{dev} is in use (")
        assert " IOPS over the last " in note and "measured" not in note, note
        iops = float(note.split("(")[1].split(" IOPS")[0].replace(",", ""))
        assert iops >= 50
        await pilot.press("n")
        await _wait_for(pilot, lambda: "not started" in _text(app, "#probe-error"))
        assert len(panel.history) == 0
        # Frames of the device idle: the probe starts without a question.
        idle = FrameStore()
        _frames_while(idle, subprocess.Popen(["sleep", "30"], start_new_session=True), 1.5)
        assert recent_iops(idle, dev) is not None
        app.store = idle
        app.query_one("#probe-target", Input).focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: len(panel.history) == 1)
        assert not isinstance(app.screen, BusyDeviceScreen)
