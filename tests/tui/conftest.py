"""Pilot tests run on the stepped clock unless they are about the clock.

Every test here takes the ``step_clock`` fixture (tests/conftest.py) by default: a sampler
thread the app starts takes its frames when the test steps them (``tests.tui.helpers.started``
and ``step``, ``tests.support.frames.next_frames`` and ``step_until``), never on the wall
clock, whatever the machine's load. A test about the real clock itself (the pace of the
views, a frame taken in time, a slow frame that must not stack) says so with
``@pytest.mark.real_clock("why")``.

Pilot's own idle check (``pilot.pause()``, and twice for every key of ``pilot.press``) looks
at the process's CPU time over a window; Textual's window is 20 ms, so every pause and every
key cost at least 20 ms of sleep, about a third of the Pilot tests' wall time. Here the window
is ``IDLE_WINDOW_S`` with the same idle rule (under 5 % CPU in the window). A pause still
first waits until the screen and every widget have handled what was queued
(``Pilot._wait_for_screen``); what a test depends on beyond that it waits for by name
(``wait_for``, ``step_to``). The window is shortened by the engine's test hooks
(:mod:`iotop_plus.tui.engine.testing`), only while the engine is on: on stock Textual
(``IOTOP_PLUS_STOCK_TEXTUAL=1``) the lane runs with Textual's own.

``engine_mode`` runs a test twice: with the engine on, and on stock Textual.
"""

from __future__ import annotations

import pytest

from iotop_plus.tui.engine import testing as engine_testing
from tests.support.frames import StepClock

IDLE_WINDOW_S = 0.004
"""Pilot's idle window here (Textual's is 20 ms)."""


@pytest.fixture(autouse=True)
def _stepped_by_default(request: pytest.FixtureRequest) -> StepClock | None:
    """The ``step_clock`` fixture, unless the test is marked ``real_clock`` (with its reason)."""
    marker = request.node.get_closest_marker("real_clock")
    if marker is not None:
        assert marker.args and marker.args[0], "real_clock needs a reason: why the real clock"
        return None
    clock: StepClock = request.getfixturevalue("step_clock")
    return clock


@pytest.fixture(autouse=True)
def _short_idle_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pilot's idle check looks at ``IDLE_WINDOW_S`` windows (same 5 % rule as Textual's)."""
    engine_testing.short_idle_window(monkeypatch, IDLE_WINDOW_S)


@pytest.fixture(params=["engine", "stock"])
def engine_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs with the engine on ("engine") and on stock Textual ("stock")."""
    mode: str = request.param
    engine_testing.switch(monkeypatch, stock=mode == "stock")
    return mode
