"""The main screen's one shown frame: ``space`` and the scrub keys change its mode and its
position, and the device table (as every view) follows it, not the newest frame."""

from __future__ import annotations

from textual.widgets import Static

from iotop_plus.tui.shown import HISTORY, LIVE, PAUSED, FrameViewer, Shown
from tests.tui.helpers import started, wait_for
from tests.tui.test_history_scrub import app_with_history, header, shows_frame


async def test_pausing_and_scrubbing_move_the_shown_frame_and_the_table_follows() -> None:
    app, frames = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        live = screen.shown
        # (equal, not the same: the frame with its verdict judged may take its place)
        assert (live.mode, live.at) == (LIVE, None) and live.frame == app.latest_frame
        assert live.frame is not None and shows_frame(app, live.frame)

        await pilot.press("space")
        paused = screen.shown
        assert (paused.mode, paused.at) == (PAUSED, None) and paused.frame == live.frame
        # Sampling goes on: a new frame is recorded, the screen stays on the paused one.
        taken = app.feed.frames_received
        assert app.feed.thread is not None
        app.feed.thread.sample_now()
        await wait_for(pilot, lambda: app.feed.frames_received > taken, "a new frame")
        assert app.latest_frame != paused.frame
        assert screen.shown.mode == PAUSED and screen.shown.frame == paused.frame
        assert shows_frame(app, paused.frame) and "PAUSED at" in header(app)

        await pilot.press("left_curly_bracket")  # a minute back: into the ring's frames
        back = screen.shown
        assert back.mode == HISTORY and back.frame is not None
        assert back.at == back.frame.wall_time < paused.frame.wall_time
        assert shows_frame(app, back.frame) and "HISTORY at" in header(app)
        await pilot.press("left_square_bracket")
        further = screen.shown
        assert further.mode == HISTORY and further.frame is not None
        assert further.at is not None and further.at < back.at
        assert further.frame in frames  # the ring's, not a live one
        assert shows_frame(app, further.frame)

        await pilot.press("l")
        now = screen.shown
        assert (now.mode, now.at) == (LIVE, None) and now.frame == app.latest_frame
        assert shows_frame(app, now.frame) and "LIVE" in header(app)


class Viewer(Static):
    """A widget that shows the frame: it keeps what it was told."""

    def __init__(self) -> None:
        super().__init__("")
        self.told: list[Shown] = []

    def show_shown(self, shown: Shown) -> None:
        self.told.append(shown)


async def test_a_widget_mounted_later_is_shown_the_frame_on_screen_then_each_change() -> None:
    app, _frames = app_with_history()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        viewer = Viewer()
        assert isinstance(viewer, FrameViewer)
        await screen.mount(viewer)
        screen.views.follow_tree(viewer)
        assert viewer.told == [screen.shown]  # the frame on screen, at once
        await pilot.press("space")
        assert [s.mode for s in viewer.told] == [LIVE, PAUSED]
        await viewer.remove()
        await pilot.press("space")
        assert len(viewer.told) == 2  # removed: told nothing more
