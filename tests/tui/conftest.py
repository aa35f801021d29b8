"""Pilot tests run on the stepped clock unless they are about the clock.

Every test here takes the ``step_clock`` fixture (tests/conftest.py) by default: a sampler
thread the app starts takes its frames when the test steps them (``tests.tui.helpers.started``
and ``step``, ``tests.support.frames.next_frames`` and ``step_until``), never on the wall
clock, whatever the machine's load. A test about the real clock itself (the pace of the
views, a frame taken in time, a slow frame that must not stack) says so with
``@pytest.mark.real_clock("why")``.
"""

from __future__ import annotations

import pytest

from tests.support.frames import StepClock


@pytest.fixture(autouse=True)
def _stepped_by_default(request: pytest.FixtureRequest) -> StepClock | None:
    """The ``step_clock`` fixture, unless the test is marked ``real_clock`` (with its reason)."""
    marker = request.node.get_closest_marker("real_clock")
    if marker is not None:
        assert marker.args and marker.args[0], "real_clock needs a reason: why the real clock"
        return None
    clock: StepClock = request.getfixturevalue("step_clock")
    return clock
