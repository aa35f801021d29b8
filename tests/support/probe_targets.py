"""Write-probe targets on this test's loop devices, asked again while another job's
``losetup`` has the device open for a moment: ``losetup`` listing or setting up loop devices
opens each one, and the probe rightly refuses a device someone holds open."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from iotop_plus.probe.run_types import ProbeOutcome, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import TargetError
from tests.support.wait import comes_within, holds_within

T = TypeVar("T")
LOSETUP_S = 10.0
"""How long another job's ``losetup`` may keep the device open before its refusal stands."""


def _held_by_losetup(exc: TargetError) -> bool:
    return "(losetup) has" in str(exc)


def unless_losetup(plan: Callable[[], T]) -> T:
    """``plan()``, again while it is refused because a ``losetup`` has the device open; any
    other refusal is raised at once."""
    planned: list[T] = []

    def granted() -> bool:
        try:
            planned.append(plan())
        except TargetError as exc:
            if not _held_by_losetup(exc):
                raise
            return False
        return True

    if holds_within(granted, LOSETUP_S):
        return planned[-1]
    return plan()


async def run_unless_losetup(runner: ProbeRunner, request: ProbeRequest) -> ProbeOutcome:
    """``runner.run(request)``, again while it is refused because a ``losetup`` has the
    device open; any other refusal is raised at once."""
    outcomes: list[ProbeOutcome] = []

    async def ran() -> bool:
        try:
            outcomes.append(await runner.run(request))
        except TargetError as exc:
            if not _held_by_losetup(exc):
                raise
            return False
        return True

    if await comes_within(ran, LOSETUP_S):
        return outcomes[-1]
    return await runner.run(request)
