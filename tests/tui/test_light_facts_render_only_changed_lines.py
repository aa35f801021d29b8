"""#25: a frame that changes one Device tab fact makes that line's strip alone; the other ~30
lines keep their strips from the frame before (the profile put ~9 % of the TUI's busy time
in rendering every line of the facts every frame, and later ~10 % of the live main thread in
making the facts' whole text again and splitting it into lines)."""

from __future__ import annotations

import pytest

from tests.support.frames import StepClock
from tests.tui.light_support import fact_strips_made, memory_fact


async def test_a_new_memory_figure_makes_one_line_of_the_facts(
    step_clock: StepClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the queue settings are read, a show() with what the panel holds changes nothing
    # but the memory line.
    first = "dirty 20.3M (bg 2.2G)"
    async with memory_fact(monkeypatch, first) as (pilot, tab):
        with fact_strips_made(monkeypatch) as made:
            for dirty in ("19.8M", "21.0M"):
                made.clear()
                tab.show(f"dirty {dirty} (bg 2.2G)")
                assert len(made) == 1 and dirty in made[0], made  # not the ~30 lines
        await pilot.pause()
        assert "dirty 21.0M" in tab.panel.text
