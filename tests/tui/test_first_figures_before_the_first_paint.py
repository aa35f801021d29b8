"""#25, first figures: the frames read while the main screen composes are on its first paint.

The sampler thread starts before the main screen is pushed. Frames it reads while Textual
composes and mounts the screen used to wait behind the screen's first paint (an empty table
and charts, a whole compositor pass on the 2-core host) and be painted after it; they are now
held by the feed and shown from the screen's on_mount, so the first paint has them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.screen import Screen

from iotop_plus.config import Config
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.engine.testing import on_paint
from iotop_plus.tui.screens.main import MainScreen
from tests.support.frames import StepClock
from tests.support.wait import holds_within
from tests.tui.canned import canned_app
from tests.tui.helpers import started

REPO = Path(__file__).resolve().parents[2]


async def test_frames_read_while_composing_are_on_the_first_paint(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[Frame] = []
    next_frame = LiveSource.next_frame

    def handing(self: LiveSource, *args: object, **kwargs: object) -> Frame:
        frame = next_frame(self, *args, **kwargs)  # type: ignore[arg-type]
        handed.append(frame)
        return frame

    monkeypatch.setattr(LiveSource, "next_frame", handing)
    compose = MainScreen.compose

    def slow_compose(self: MainScreen) -> Iterator[object]:
        # Compose once the sampler has read its first frame (handed to the event loop, which
        # runs it once this returns), as on a host where Textual takes longer to load than a
        # frame to read.
        holds_within(lambda: bool(handed), 3.0)
        yield from compose(self)

    monkeypatch.setattr(MainScreen, "compose", slow_compose)
    painted: list[int] = []  # frames shown at each paint of the main screen

    def counting_paint(screen: Screen[object]) -> None:
        if isinstance(screen, MainScreen):
            painted.append(screen.feed.frames_received)

    on_paint(monkeypatch, counting_paint)
    app = canned_app(Config(interval=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        assert handed, "the sampler read no frame"
        assert painted, "the main screen was never painted"
        assert painted[0] >= 1, f"first paint before any frame was shown: {painted[:3]}"


SCRIPT = """
import json, sys
from iotop_plus.config import Config
from iotop_plus.tui.screens.main import MainScreen
from tests.tui.canned import canned_app

app = canned_app(Config(interval=1))
watch = MainScreen.watch_shown
seen = {}

def watch_shown(self, before, shown):
    watch(self, before, shown)
    if not seen and shown.frame is not None:
        seen["modules"] = sorted(sys.modules)
        self.app.exit()

MainScreen.watch_shown = watch_shown
app.run(headless=True, size=(120, 36))
print(json.dumps(seen.get("modules", [])))
"""

NOT_BEFORE_THE_FIRST_FRAME = (
    "iotop_plus.tui.screens.settings_modals",  # the restore and keep-or-revert questions
    "iotop_plus.tui.screens.modal",
    "iotop_plus.tui.palette",  # the command palette's entries
    "iotop_plus.tui.screens.help",
    "iotop_plus.tui.widgets.process_panel",  # the deferred side-panel tabs
    "iotop_plus.tui.widgets.settings_panel",
    "iotop_plus.tui.widgets.probe_panel",
    "iotop_plus.sampling.latency.part",  # the tracer
    "iotop_plus.tui.widgets.charts",  # the charts and the side panel: after the first paint
    "iotop_plus.tui.widgets.braille_chart",
    "iotop_plus.tui.widgets.device_panel",
    "iotop_plus.tui.widgets.filter_input",  # the filter box and the latency view: when shown
    "iotop_plus.tui.widgets.latency_view",
)


def test_the_first_frame_loads_no_dialog_palette_hidden_tab_or_later_part() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "iotop_plus.tui.screens.main" in modules  # the spy saw the first frame
    loaded = [m for m in NOT_BEFORE_THE_FIRST_FRAME if m in modules]
    assert not loaded, f"imported before the first frame: {loaded}"


async def test_mounting_the_main_screen_restyles_nothing(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its classes (view, narrow or wide) are set before its children mount: set from
    # on_mount, each change restyled the whole screen once more before its first paint.
    restyled: list[str] = []
    mount = MainScreen.on_mount
    update = MainScreen.update_node_styles

    def watching_mount(self: MainScreen) -> None:
        monkeypatch.setattr(
            MainScreen, "update_node_styles", lambda s, *a: restyled.append("screen")
        )
        try:
            mount(self)
        finally:
            monkeypatch.setattr(MainScreen, "update_node_styles", update)

    monkeypatch.setattr(MainScreen, "on_mount", watching_mount)
    app = canned_app(Config(interval=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        assert app.main_screen.has_class("view-table")
        assert not app.main_screen.has_class("narrow")
    assert restyled == []
    app = canned_app(Config(interval=1))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        assert app.main_screen.has_class("narrow") and app.main_screen.has_class("view-table")
