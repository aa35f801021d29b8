"""Small helpers for Pilot tests: reading what the table shows (``wait_for`` is
:mod:`tests.support.wait`'s, here too for the tests that import it from here)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual import events
from textual.pilot import Pilot

from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.widgets.device_table import DeviceTable
from tests.support.frames import next_frames, stepped
from tests.support.wait import wait_for

__all__ = [
    "burst",
    "parts_up",
    "row_line",
    "started",
    "step",
    "step_to",
    "table",
    "table_lines",
    "wait_for",
]


CHARACTERS = {"slash": "/", "minus": "-", "plus": "+", "space": " "}


async def burst(pilot: Pilot[Any], *keys: str) -> None:
    """Deliver ``keys`` in one go, as a paste or a fast typist over SSH does.

    ``pilot.press`` waits for the app to go idle after each key, so a key that opens
    something always finds it open. Here every key is queued before the first is handled.
    """
    for key in keys:
        char = key if len(key) == 1 else CHARACTERS.get(key)
        pilot.app.post_message(events.Key(key, char))
    await pilot.pause()
    await pilot.pause()


def table(app: IotopPlusApp) -> DeviceTable:
    """The device table of the main screen."""
    return app.main_screen.query_one(DeviceTable)


def table_lines(app: IotopPlusApp) -> list[str]:
    """The text of every line the table shows right now (header included)."""
    t = table(app)
    return [t.render_line(y).text.rstrip() for y in range(t.size.height)]


def row_line(app: IotopPlusApp, name: str) -> str:
    """The shown line of device ``name`` (by its position among the rows)."""
    t = table(app)
    index = [r.name for r in t.rows].index(name)
    return t.render_line(index - t.scroll_offset.y + 2).text


async def started(
    pilot: Pilot[int], app: IotopPlusApp, ticks: int = 2, *, parts: bool = True
) -> None:
    """Wait until the app has shown ``ticks`` samples (two give rates) and mounted its charts
    and side panel (just after its first paint); on a stepped clock (the ``step_clock``
    fixture), step it for them. ``parts=False``: not the charts and side panel."""
    await wait_for(pilot, lambda: app.sampler_thread is not None, "the sampler thread")
    thread = app.sampler_thread
    if stepped(thread) is not None and app.frames_received < ticks:
        assert thread is not None
        await next_frames(pilot, thread, lambda: app.frames_received, ticks - app.frames_received)
    await wait_for(pilot, lambda: app.frames_received >= ticks, f"{ticks} frames")
    if parts:
        await parts_up(pilot, app)
    await asyncio.sleep(0)


async def parts_up(pilot: Pilot[int], app: IotopPlusApp) -> None:
    """Wait until the main screen has mounted its charts and side panel (just after its first
    paint: keys typed before wait for them, see ``screens/later_parts.py``)."""
    screen = app.main_screen
    await wait_for(pilot, lambda: screen.later.mounted, "the charts and the side panel")


async def step(
    pilot: Pilot[int], app: IotopPlusApp, frames: int = 1, timeout: float = 10.0
) -> None:
    """On a stepped clock (the ``step_clock`` fixture): let exactly ``frames`` more frames
    come, and wait (up to ``timeout`` s) until the app has received them."""
    thread = app.sampler_thread
    assert thread is not None and stepped(thread) is not None, "take the step_clock fixture"
    await next_frames(pilot, thread, lambda: app.frames_received, frames, timeout)


async def step_to(
    pilot: Pilot[int],
    app: IotopPlusApp,
    condition: Callable[[], object],
    what: str = "the condition",
    frames: int = 20,
    timeout: float = 10.0,
) -> None:
    """On a stepped clock: let frames come one at a time, each received by the app (within
    ``timeout`` s), until ``condition()`` holds; fail naming ``what`` after ``frames`` frames."""
    for _ in range(frames):
        if condition():
            await pilot.pause()
            return
        await step(pilot, app, timeout=timeout)
    assert condition(), f"{what} not met within {frames} frames"
