"""Waiting on a condition, never on the clock: the one home of the suite's waits.

``wait_for`` lets a Pilot app run until a condition holds; ``holds_within`` polls one from
plain (non-async) code, such as a test that watches a child process or a file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

STEP_S = 0.05


async def wait_for(
    pilot: Pilot[Any],
    condition: Callable[[], object],
    what: str = "the condition",
    timeout: float = 10.0,
) -> None:
    """Let the app run until ``condition()`` is true; fail naming ``what`` after ``timeout`` s.

    The app gets one more turn once it holds, so what the condition saw is drawn.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s")
        await pilot.pause(STEP_S)
    await pilot.pause()


def holds_within(condition: Callable[[], object], timeout: float) -> bool:
    """Whether ``condition()`` becomes true within ``timeout`` seconds (polled, no app)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(STEP_S)
    return bool(condition())
