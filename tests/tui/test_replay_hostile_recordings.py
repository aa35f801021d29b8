"""The replay TUI on hostile or corrupt recordings: it opens what can be read and scrubs it
without a traceback (#22 item 6). Seeded mutated copies of a real small recording, each
replayed with the Pilot and scrubbed with the history keys."""

from __future__ import annotations

import random
from pathlib import Path

from iotop_plus.record.format import FormatError
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.tui.replay import make_replay_app
from tests.support.budget import examples
from tests.support.hostile_recordings import mutate, write_small_recording
from tests.tui.helpers import wait_for

SEED = 2212
REPLAYS = examples(12, floor=3)
"""Mutated recordings replayed: 12 in ``make test``, the first 3 of the same seeded sequence
in ``make test-fast`` (each is a Pilot session)."""


async def test_replay_scrubs_mutated_recordings_without_a_traceback(tmp_path: Path) -> None:
    original = tmp_path / "iotop-plus-000001-20231114-221330.rec"
    write_small_recording(original, 70)
    data = original.read_bytes()
    rng = random.Random(SEED)
    replayed = 0
    for case in range(40):
        path = tmp_path / f"case-{case}.rec"
        path.write_bytes(mutate(data, rng))
        try:
            timeline = open_timeline(path)
        except (FormatError, OSError):
            continue
        if timeline.span() is None:
            timeline.close()
            continue
        app = make_replay_app(Roots(), timeline, None)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.shown_frame is not None)  # noqa: B023
            await pilot.press("right_square_bracket", "right_curly_bracket", "left_curly_bracket")
            await pilot.press("left_square_bracket", "l", "right_square_bracket")
            await pilot.pause()
        assert app.return_code in (0, None), f"case {case}"
        timeline.close()
        replayed += 1
        if replayed >= REPLAYS:
            break
    assert replayed >= min(8, REPLAYS)
