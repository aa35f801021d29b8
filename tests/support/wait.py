"""Waiting on a condition, never on the clock: the one home of the suite's waits.

``wait_for`` lets a Pilot app run until a condition holds; ``holds_within`` polls one from
plain (non-async) code, such as a test that watches a child process or a file;
``comes_within`` awaits one from a coroutine with no app, letting the event loop run between
looks.

Both look again soon at first and then less often (``FIRST_LOOK_S`` doubling up to
``STEP_S``): most conditions hold within a few milliseconds (a frame delivered, a key
handled), and a fixed 50 ms look made every one of them cost 50 ms; a condition that takes
longer is looked at no more often than before, so the checks cost no more CPU.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from textual.pilot import Pilot

STEP_S = 0.05
"""The longest gap between two looks at a condition."""
FIRST_LOOK_S = 0.001
"""The first gap; each next one is twice as long, up to ``STEP_S``."""


def gaps() -> Iterator[float]:
    """The gaps between looks at a condition: ``FIRST_LOOK_S`` doubling up to ``STEP_S``."""
    gap = FIRST_LOOK_S
    while True:
        yield gap
        gap = min(gap * 2, STEP_S)


async def wait_for(
    pilot: Pilot[Any],
    condition: Callable[[], object],
    what: str = "the condition",
    timeout: float = 10.0,
) -> None:
    """Let the app run until ``condition()`` is true; fail naming ``what`` after ``timeout`` s.

    Between looks the app handles what is queued, runs for the gap and updates its screen
    (``pilot.pause(gap)``); once the condition holds, the app gets one more turn
    (``pilot.pause()``) so what the condition saw is drawn.
    """
    deadline = time.monotonic() + timeout
    for gap in gaps():
        if condition():
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout} s")
        await pilot.pause(gap)  # the app handles what is queued, runs ``gap``, then updates
    await pilot.pause()


def gaps_within(timeout: float) -> Iterator[float]:
    """``gaps()`` until ``timeout`` seconds have passed since the first look."""
    deadline = time.monotonic() + timeout
    for gap in gaps():
        if time.monotonic() >= deadline:
            return
        yield gap


def holds_within(condition: Callable[[], object], timeout: float) -> bool:
    """Whether ``condition()`` becomes true within ``timeout`` seconds (polled, no app)."""
    for gap in gaps_within(timeout):
        if condition():
            return True
        time.sleep(gap)
    return bool(condition())


async def comes_within(condition: Callable[[], Awaitable[object]], timeout: float) -> bool:
    """Whether ``await condition()`` becomes true within ``timeout`` seconds (polled, no app;
    the event loop runs between looks)."""
    for gap in gaps_within(timeout):
        if await condition():
            return True
        await asyncio.sleep(gap)
    return bool(await condition())
