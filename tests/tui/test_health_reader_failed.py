"""A health reader whose thread dies shows in the Device tab as ``health: failed: <why>``,
and the rest of the TUI goes on (frames keep coming, the I/O errors line stays)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from iotop_plus.roots import Roots
from iotop_plus.sampling.health import part as health_part
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.support.wait import holds_within
from tests.tui.canned import canned_app
from tests.tui.helpers import started, step, wait_for

pytestmark = [
    pytest.mark.usefixtures("step_clock"),
    # the reader's thread does die: its exception goes on to threading.excepthook
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]

FAILED = "health: failed: the health reader stopped (RuntimeError: sysfs went away"


async def _step_until(
    pilot: Pilot[int], app: IotopPlusApp, condition: Callable[[], bool], what: str
) -> None:
    deadline = time.monotonic() + 30.0
    while not condition():
        assert time.monotonic() < deadline, f"{what} not met within 30 s of frames"
        await step(pilot, app)


async def test_a_dead_health_reader_shows_failed_and_the_rest_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reached = threading.Event()

    def driver_gone(roots: Roots, name: str) -> str | None:
        reached.set()
        raise RuntimeError("sysfs went away\nsecond line")

    # The worker's own step outside the per-device guard: a failure there ends its thread.
    monkeypatch.setattr(health_part, "device_driver", driver_gone)
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("3")  # the panel, its Device tab first
        panel = app.main_screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "\nhealth: " in panel.text, "the health line")
        assert holds_within(reached.is_set, 10.0), "the health reader never ran"
        await _step_until(pilot, app, lambda: FAILED in panel.text, "the failed health line")
        line = next(x for x in panel.text.splitlines() if x.startswith("health: "))
        assert line == FAILED + ")", line  # one line: the first of the exception's
        # The rest goes on: frames keep coming and the panel keeps its other lines.
        received = app.frames_received
        await step(pilot, app, frames=2)
        assert app.frames_received >= received + 2
        assert app.is_running
        assert "\nI/O errors: " in panel.text
        assert FAILED in panel.text
