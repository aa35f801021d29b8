"""#25: a frame that changes one Device tab fact renders that line's text alone; the other
~30 lines keep their strips from the frame before (the profile put ~9 % of the TUI's busy
time in rendering every line of the facts every frame)."""

from __future__ import annotations

import pytest

from tests.support.frames import StepClock
from tests.tui.light_support import memory_fact, texts_through


async def test_a_new_memory_figure_renders_one_line_of_the_facts(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the queue settings are read, a show() with what the panel holds changes nothing
    # but the memory line.
    first = "dirty 20.3M (bg 2.2G)"
    async with memory_fact(monkeypatch, first) as (pilot, tab):
        with texts_through(monkeypatch, "render") as rendered:
            for dirty in ("19.8M", "21.0M"):
                rendered.clear()
                tab.show(f"dirty {dirty} (bg 2.2G)")
                facts_lines = [line for line in rendered if "dirty" in line]
                assert len(facts_lines) == 1 and dirty in facts_lines[0]
                assert len(rendered) <= 3, rendered  # not the ~30 lines of the panel
        await pilot.pause()
        assert "dirty 21.0M" in tab.panel.text
