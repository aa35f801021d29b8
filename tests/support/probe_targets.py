"""Write-probe targets on this test's loop devices, asked again while another job's
``losetup`` has the device open for a moment: ``losetup`` listing or setting up loop devices
opens each one, and the probe rightly refuses a device someone holds open."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

from iotop_plus.probe.run_types import ProbeOutcome, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import TargetError

T = TypeVar("T")
TRIES = 100
"""Looks, 0.1 s apart."""


def _losetup(exc: TargetError) -> bool:
    return "(losetup) has" in str(exc)


def unless_losetup(plan: Callable[[], T]) -> T:
    """``plan()``, again while it is refused because a ``losetup`` has the device open."""
    for _ in range(TRIES):
        try:
            return plan()
        except TargetError as exc:
            if not _losetup(exc):
                raise
            time.sleep(0.1)
    return plan()


async def run_unless_losetup(runner: ProbeRunner, request: ProbeRequest) -> ProbeOutcome:
    """``runner.run(request)``, again while it is refused because a ``losetup`` has the
    device open."""
    for _ in range(TRIES):
        try:
            return await runner.run(request)
        except TargetError as exc:
            if not _losetup(exc):
                raise
            await asyncio.sleep(0.1)
    return await runner.run(request)
