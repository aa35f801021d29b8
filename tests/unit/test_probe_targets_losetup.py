"""The root tests' probe targets are asked again while another job's ``losetup`` holds the
loop device (tests/support/probe_targets.py), and only then: any other refusal stands at once,
and a device ``losetup`` keeps past the wait is refused as it is."""

from __future__ import annotations

from typing import cast

import pytest

from iotop_plus.probe.run_types import ProbeOutcome, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import ConfirmationNeeded, TargetError
from tests.support import probe_targets
from tests.support.probe_targets import run_unless_losetup, unless_losetup

HELD = TargetError("refusing to write to /dev/loop9: pid 4242 (losetup) has /dev/loop9 open")
MOUNTED = TargetError("refusing to write to /dev/loop9: pid 4242 (mount) has /dev/loop9 open")


class Refusals:
    """A plan, or a runner's ``run``, refused with each of ``refusals`` in turn, then granted."""

    def __init__(self, *refusals: TargetError) -> None:
        self.refusals = list(refusals)
        self.calls = 0

    def plan(self) -> str:
        self.calls += 1
        if self.refusals:
            raise self.refusals.pop(0)
        return "planned"

    async def run(self, request: ProbeRequest) -> ProbeOutcome:
        del request
        return cast(ProbeOutcome, self.plan())


def test_a_plan_refused_while_losetup_holds_the_device_is_asked_again() -> None:
    refusals = Refusals(HELD, HELD, HELD)
    assert unless_losetup(refusals.plan) == "planned"
    assert refusals.calls == 4


@pytest.mark.parametrize("refusal", [MOUNTED, ConfirmationNeeded("loop9")])
def test_any_other_refusal_stands_at_once(refusal: TargetError) -> None:
    refusals = Refusals(refusal)
    with pytest.raises(TargetError) as info:
        unless_losetup(refusals.plan)
    assert info.value is refusal and refusals.calls == 1


def test_a_device_losetup_keeps_past_the_wait_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_targets, "LOSETUP_S", 0.05)
    refusals = Refusals(*[HELD] * 100_000)
    with pytest.raises(TargetError) as info:
        unless_losetup(refusals.plan)
    assert info.value is HELD and 1 < refusals.calls < 100_000


async def test_a_run_is_retried_the_same_way() -> None:
    granted = Refusals(HELD, HELD)
    runner = cast(ProbeRunner, granted)
    request = cast(ProbeRequest, None)
    assert await run_unless_losetup(runner, request) == "planned"
    assert granted.calls == 3
    refused = Refusals(HELD, MOUNTED)
    with pytest.raises(TargetError) as info:
        await run_unless_losetup(cast(ProbeRunner, refused), request)
    assert info.value is MOUNTED and refused.calls == 2
