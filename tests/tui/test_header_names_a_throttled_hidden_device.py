"""The header (and the table's note) name a hidden device some cgroup is throttled on before
the busiest hidden one: an incident behind a limit shows even when the device is not busy."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from types import MappingProxyType

from iotop_plus.sampling.cgroups.files import IoLimits
from iotop_plus.sampling.cgroups.reader import (
    CgroupRates,
    CgroupSample,
    CgroupStat,
    IoRates,
)
from iotop_plus.sampling.cgroups.throttle_watch import ThrottleFrame
from iotop_plus.sampling.frame.model import CgroupFrame
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.device_rows import named_hidden
from tests.tui.helpers import started, table, wait_for
from tests.tui.test_starting_device_and_busy_hidden import app_on, header, host_copy


def test_a_throttled_hidden_device_is_named_before_a_busier_one() -> None:
    iops = {"loop0": 9000.0, "loop1": 3.0, "sdb": 10.0}.__getitem__
    assert named_hidden(["loop0", "loop1"], frozenset({"loop1"}), iops, 100.0) == (
        "loop1",
        "throttled",
    )
    assert named_hidden(["loop0", "loop1"], frozenset(), iops, 100.0) == ("loop0", "busy")
    assert named_hidden(["loop1"], frozenset(), iops, 100.0) == (None, "busy")


def throttled_on(devno: str) -> ThrottleFrame:
    """A cgroup at 99 % of a 100 IOPS read limit on ``devno``."""
    now = time.monotonic()
    limits = IoLimits(max={devno: {"riops": 100, "rbps": None, "wbps": None, "wiops": None}})
    stat = CgroupStat("/tenant", 1, {}, None, limits)
    sample = CgroupSample(now, time.time(), "v2", "/sys/fs/cgroup", {"/tenant": stat})
    sample = dataclasses.replace(sample, device_names=MappingProxyType({devno: "loop0"}))
    used = IoRates(0.0, 0.0, 99.0, 0.0, 0.0)
    rates = {"/tenant": CgroupRates(used, {devno: used})}
    return ThrottleFrame(CgroupFrame(sample, rates))


async def test_the_header_names_an_idle_hidden_device_a_cgroup_is_throttled_on(
    tmp_path: Path,
) -> None:
    app = app_on(host_copy(tmp_path))
    async with app.run_test(size=(160, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert "loop0" not in t.visible_names() and t.busy_hidden is None
        frame = app.main_screen.shown_frame
        assert frame is not None
        t.show_shown(Shown(dataclasses.replace(frame, parts={"throttles": throttled_on("7:0")})))
        await pilot.pause()
        assert (t.busy_hidden, t.hidden_why) == ("loop0", "throttled")
        await wait_for(pilot, lambda: "loop0 throttled (a: show all)" in header(app), "the note")
