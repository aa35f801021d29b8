"""#25: a frame that changes one Device tab fact renders that line's text alone; the other
~30 lines keep their strips from the frame before (the profile put ~9 % of the TUI's busy
time in rendering every line of the facts every frame)."""

from __future__ import annotations

import pytest
from rich.text import Text

from iotop_plus.config import Config
from tests.support.frames import StepClock
from tests.support.wait import wait_for
from tests.tui.canned import canned_app
from tests.tui.helpers import started


async def test_a_new_memory_figure_renders_one_line_of_the_facts(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from iotop_plus.tui.widgets import device_panel

    app = canned_app(Config(interval=1))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.pause()
        panel = app.main_screen.query_one(device_panel.DevicePanel)
        # The queue settings are read in a worker: once they are in, a show() with what the
        # panel holds changes nothing but the memory line.
        await wait_for(
            pilot, lambda: panel.settings is not None and "…" not in panel.text, "the settings read"
        )
        dev, settings, frame = panel.device, panel.settings, app.main_screen.shown_frame
        assert dev is not None
        memory = ["dirty 20.3M (bg 2.2G)"]
        monkeypatch.setattr(device_panel, "why_facts", lambda *_: [("memory", memory[0])])
        panel.show(dev, settings, frame)
        await pilot.pause()
        rendered: list[str] = []
        original = Text.render

        def spy(self: Text, *args: object, **kwargs: object) -> object:
            rendered.append(self.plain)
            return original(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Text, "render", spy)
        for dirty in ("19.8M", "21.0M"):
            memory[0] = f"dirty {dirty} (bg 2.2G)"
            rendered.clear()
            panel.show(dev, settings, frame)
            facts_lines = [line for line in rendered if "dirty" in line]
            assert len(facts_lines) == 1 and dirty in facts_lines[0]
            assert len(rendered) <= 3, rendered  # not the ~30 lines of the panel
        monkeypatch.setattr(Text, "render", original)
        await pilot.pause()
        assert "dirty 21.0M" in panel.text
