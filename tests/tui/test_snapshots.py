"""Pinned layouts (pytest-textual-snapshot) of the real app on the tui_host fixture.

The canned sampler makes the figures identical on every run (see tests/tui/canned.py), and
the stepped clock (``step_clock``) gives exactly two frames, however slow the machine: on the
wall clock a third would come 10 s in and change them.
Update with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from textual.pilot import Pilot

from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for

pytestmark = pytest.mark.usefixtures("step_clock", "engine_mode")  # (each both ways)


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """The header shows the frame's wall-clock time: pin the zone so snapshots match anywhere."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.fixture(autouse=True)
def toasts_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A toast goes when its timeout has passed on the wall clock, so on a slow host it could
    be gone before the picture is taken: here toasts stay, as a host of any speed shows them
    right after the key that raised them."""
    notify = IotopPlusApp.notify

    def staying(self: IotopPlusApp, *args: object, **kwargs: object) -> None:
        kwargs["timeout"] = 3600
        notify(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(IotopPlusApp, "notify", staying)


async def _ready(pilot: Pilot[int]) -> None:
    app = pilot.app
    await started(pilot, app)  # type: ignore[arg-type]
    await wait_for(pilot, lambda: app.main_screen.query_one("#device-panel").settings is not None)  # type: ignore[attr-defined]
    await pilot.pause()


def test_main_screen_120x36(snap_compare) -> None:
    assert snap_compare(canned_app(), terminal_size=(120, 36), run_before=_ready)


def test_main_screen_80x24(snap_compare) -> None:
    assert snap_compare(canned_app(), terminal_size=(80, 24), run_before=_ready)


def test_all_devices_80x24(snap_compare) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await _ready(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: bool(pilot.app.screen.query("Toast")))

    assert snap_compare(canned_app(), terminal_size=(80, 24), run_before=run_before)


def test_panel_tab_80x24(snap_compare) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await _ready(pilot)
        await pilot.press("home", "down", "3")  # dm-0, then nvme0n1 (which starts selected)
        app = pilot.app
        assert isinstance(app, IotopPlusApp)
        panel = app.main_screen.query_one("#device-panel", DevicePanel)
        await wait_for(pilot, lambda: "Samsung" in panel.text)
        await pilot.pause()

    assert snap_compare(canned_app(), terminal_size=(80, 24), run_before=run_before)


def test_help_screen_120x36(snap_compare) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await _ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(canned_app(), terminal_size=(120, 36), run_before=run_before)
