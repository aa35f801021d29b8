"""The Device tab's verdict checks throttling without the Cgroups tab (#24 gap 2): a cheap
check finds the cgroups with a limit now and then (limits files only) and reads only their
counters each frame; "throttled" was unchecked until the full cgroup part was read."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups import throttle_watch
from iotop_plus.sampling.cgroups.throttle_watch import SCAN_S, ThrottlePart, ThrottleWatch
from iotop_plus.sampling.frame.model import CGROUPS
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.tui.why_lines import verdict_facts
from iotop_plus.why.diagnosis import diagnose
from tests.support.cgroup_trees import write_cgroup
from tests.unit.test_cgroup_limits_honesty import CRON, throttled_hybrid
from tests.unit.test_verdict_line import everything, frame, rates


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def roots_of(base: Path) -> Roots:
    return Roots(base / "proc", base / "sys")


def test_a_v1_throttle_is_judged_from_the_limited_cgroups_alone(tmp_path: Path) -> None:
    throttled_hybrid(tmp_path, scale=1)
    clock = Clock()
    watch = ThrottleWatch(roots_of(tmp_path), clock=clock)
    first = watch.frame()
    assert first.part is not None and first.problem is None and first.scan_s is not None
    # Only the limited cgroup is read each frame, not the tree (root, slice, ssh, cron).
    assert set(first.part.sample.cgroups) == {CRON}
    throttled_hybrid(tmp_path, scale=100)  # cron reads far past its 10 IOPS since
    second = watch.frame()
    assert second.part is not None and second.part.rates[CRON] is not None
    parts = everything(cgroups=None, throttles=second)
    verdict = diagnose(frame(rates(reads=50), **parts), "sda")
    assert "throttled" not in verdict.unchecked
    [cause] = [c for c in verdict.as_json() if c["cause"] == "throttled"]
    assert cause["evidence"]["cgroup"] == CRON and cause["evidence"]["limit"] == "riops"
    assert cause["evidence"]["source"] == "blkio.throttle" and cause["confidence"] == "high"
    # Without the check (and without cgroups), throttling stays unchecked, never guessed.
    bare = diagnose(frame(rates(reads=50), **everything(cgroups=None)), "sda")
    assert "throttled" in bare.unchecked


def test_limits_are_looked_for_again_only_after_the_scan_interval(tmp_path: Path) -> None:
    blkio = throttled_hybrid(tmp_path)
    clock = Clock()
    watch = ThrottleWatch(roots_of(tmp_path), clock=clock)
    watch.frame()
    write_cgroup(blkio, "/system.slice/ssh.service", {"blkio.throttle.read_bps_device": "8:0 5\n"})
    part = watch.frame().part
    assert part is not None and set(part.sample.cgroups) == {CRON}
    clock.now += SCAN_S
    part = watch.frame().part
    assert part is not None and set(part.sample.cgroups) == {CRON, "/system.slice/ssh.service"}


def test_a_scan_over_budget_turns_the_check_off_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    throttled_hybrid(tmp_path)
    monkeypatch.setattr(throttle_watch, "SCAN_BUDGET_S", 0.0)
    watch = ThrottleWatch(roots_of(tmp_path))
    checked = watch.frame()
    assert checked.part is None and checked.problem is not None
    assert checked.problem.startswith("throttling unchecked: finding the limits of 4 cgroups took")
    shown = frame(rates(reads=50), **everything(cgroups=None, throttles=checked))
    assert "throttled" in diagnose(shown, "sda").unchecked
    assert ("why note", checked.problem) in verdict_facts("sda", shown)


def test_the_tuis_source_checks_throttling_only_while_cgroups_are_not_read(
    tmp_path: Path,
) -> None:
    throttled_hybrid(tmp_path)
    source = live_source(roots_of(tmp_path), throttles=True)
    try:
        plain = source.next_frame()
        assert plain.cgroups is None and plain.get(ThrottlePart) is not None
        source.want(CGROUPS, True)
        full = source.next_frame()
        assert full.cgroups is not None and full.get(ThrottlePart) is None
    finally:
        source.close()
