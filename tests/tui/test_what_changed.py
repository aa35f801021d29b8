"""What changed in the TUI: ``w`` compares the last ``diff_minutes`` with the ones before,
``m`` and ``M`` mark two windows; the ranked list of ``diff`` opens in a modal."""

from __future__ import annotations

import dataclasses

from textual.widgets import Static

from iotop_plus.config import Config
from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.model import FrameEvent
from iotop_plus.tui.diff_view import DiffScreen
from iotop_plus.tui.replay import make_replay_app
from tests.tui.canned import HOST_ROOTS
from tests.tui.helpers import parts_up, wait_for
from tests.tui.history_frames import fill, varying_frames

FIRST = 1_800_000_000.0
CHANGE = {
    "record": "change",
    "time": FIRST + 700.5,
    "run": "tui-7",
    "device": "sdb",
    "queue_device": "sdb",
    "setting": "read_ahead_kb",
    "old": "128",
    "new": "16",
    "effective": "16",
}


def recording():
    frames = varying_frames(900, FIRST)
    event = FrameEvent("setting", "sdb read_ahead_kb 128→16", "sdb", CHANGE, "changes")
    frames[700] = dataclasses.replace(frames[700], events=(event,))
    return fill(FrameStore(minutes=60, interval=1.0), frames), frames


def modal_text(app) -> str:
    return str(app.screen.query_one("#diff-lines", Static).render())


async def test_w_shows_the_setting_change_and_no_figure_change() -> None:
    timeline, frames = recording()
    app = make_replay_app(HOST_ROOTS, timeline, frames[899].wall_time, Config(diff_minutes=5))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[899])
        await parts_up(pilot, app)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen), timeout=30)
        text = modal_text(app)
        lines = text.splitlines()
        # The load cycles the same way in both windows: only the setting stands out.
        assert "setting" in lines[1] and "sdb read_ahead_kb 128 → 16" in lines[1], text
        assert "by tui-7" in lines[1]
        assert not any(" figure " in line for line in lines), text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, DiffScreen))


async def test_m_and_M_compare_two_marked_windows() -> None:
    timeline, frames = recording()
    app = make_replay_app(HOST_ROOTS, timeline, frames[650].wall_time, Config(diff_minutes=2))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[650])
        await parts_up(pilot, app)
        await pilot.press("m")
        assert not isinstance(app.screen, DiffScreen)  # A alone compares nothing yet
        await pilot.press("right_curly_bracket", "right_curly_bracket")  # two minutes on
        await wait_for(pilot, lambda: app.main_screen.shown_frame == frames[770])
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen), timeout=30)
        text = modal_text(app)
        assert "sdb read_ahead_kb 128 → 16" in text, text
