"""The TUI's frames judge a real v1 throttle with the Cgroups tab closed (#24 gap 2): fio in
a blkio cgroup limited to 50 read IOPS on a loop device; the frames carry no cgroups, only
the throttle check's limited cgroups, and the verdict names the limit."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.throttle_watch import ThrottlePart
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.why.diagnosis import diagnose
from tests.e2e.test_tui_tmux import console_script, wait_for_table
from tests.e2e.test_who_issuers_real import BLKIO_V1, blkio_cgroup, fio_in_cgroup
from tests.e2e.test_why_real import RIOPS, need_root
from tests.support.tmux import TmuxSession, tmux_available
from tests.support.wait import holds_within

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_the_tuis_frames_name_a_v1_throttle_without_reading_every_cgroup(
    make_loop, fio_bin: str
) -> None:
    need_root()
    dev = make_loop(64)
    devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
    source = live_source(Roots(), throttles=True)
    with blkio_cgroup("throttle-check") as cgroup:
        where = BLKIO_V1 / cgroup.lstrip("/")
        (where / "blkio.throttle.read_iops_device").write_text(f"{devno} {RIOPS}\n")
        fio = fio_in_cgroup(dev, cgroup, 30, realtime=True)
        frames: list[Frame] = [source.next_frame()]

        def named() -> bool:
            if time.monotonic() - frames[-1].monotonic < 1.0:  # a frame a second, as the TUI
                return False
            frames.append(source.next_frame())
            causes = diagnose(frames[-1], dev).as_json()
            return any(c["cause"] == "throttled" for c in causes)

        try:
            assert holds_within(named, 20), diagnose(frames[-1], dev).line()
        finally:
            fio.kill()
            fio.wait()
            source.close()
    frame = frames[-1]
    throttles = frame.get(ThrottlePart)
    assert frame.cgroups is None and throttles is not None
    part = throttles.part
    assert part is not None and cgroup in part.sample.cgroups
    # Only limited cgroups are read each frame, never the whole tree.
    assert all(s.limits is not None and s.limits.max for s in part.sample.cgroups.values())
    [cause] = [c for c in diagnose(frame, dev).as_json() if c["cause"] == "throttled"]
    evidence = cause["evidence"]
    assert (evidence["cgroup"], evidence["limit"], evidence["limit_value"]) == (
        cgroup,
        "riops",
        RIOPS,
    )
    assert evidence["source"] == "blkio.throttle" and evidence["used_pct"] >= 90


@pytest.fixture
def tmux() -> Iterator[TmuxSession]:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    with TmuxSession(120, 36) as session:
        yield session


def test_the_device_tab_names_the_throttle_in_the_real_console_script(
    make_loop, fio_bin: str, tmux: TmuxSession
) -> None:
    """As a user sees it: the TUI started as ``iotop-plus DEV``, the Cgroups tab never
    opened, and the Device tab's why line names the cgroup's limit (it listed throttled as
    unchecked before, and the console script did not use the check at first)."""
    need_root()
    dev = make_loop(64)
    devno = Path(f"/sys/block/{dev}/dev").read_text().strip()
    state = tempfile.mkdtemp(prefix="iotop-plus-test-state-")
    with blkio_cgroup("throttle-tui") as cgroup:
        where = BLKIO_V1 / cgroup.lstrip("/")
        (where / "blkio.throttle.read_iops_device").write_text(f"{devno} {RIOPS}\n")
        fio = fio_in_cgroup(dev, cgroup, 40, realtime=True)
        try:
            tmux.launch([console_script(), "--state-dir", state, "--interval", "1", dev])
            wait_for_table(tmux)
            screen = tmux.wait_until(
                lambda s: "why            throttled by" in s and "riops 50" in s,
                30,
                what="the why line",
            )
        finally:
            tmux.send_keys("q")
            fio.kill()
            fio.wait()
    # The side panel wraps the cgroup's path; its name and the limit's source are there.
    assert f"/iotop-plus-test-{os.getpid()}" in screen and cgroup.startswith("/iotop-plus-test-")
    assert "blkio.throttle limit" in screen and "[high]" in screen
