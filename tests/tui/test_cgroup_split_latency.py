"""The Cgroups tab's per-device split shows the traced device latency (#24 gap 4): the frame
carries per (device, cgroup) p50/p99 while issuers are traced, and no tab showed them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import CGROUPS, Frame
from iotop_plus.sampling.processes.issuers import (
    ESTIMATE,
    TRACER,
    CgroupShare,
    IssuersFrame,
    LatencyFigures,
)
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.tui.cgroup_rows import device_split_text
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel
from tests.tui.helpers import wait_for
from tests.tui.history_frames import fill
from tests.tui.test_cgroup_panel import host_with_cgroups

POSTGRES = "/system.slice/postgresql.service"
TRACED = CgroupShare(
    POSTGRES,
    "v2",
    120.0,
    30.0,
    480.0,
    120.0,
    LatencyFigures(0.21, 1.3, 2.5),
    LatencyFigures(0.1, 0.4, 0.9),
)


def cgroup_frames(tmp_path: Path) -> tuple[Roots, list[Frame]]:
    """Two frames of a v2 host read for real, the second with rates (postgres reads sda)."""
    roots = host_with_cgroups(tmp_path)
    source = LiveSource(roots)
    source.want(CGROUPS, True)
    try:
        first = source.next_frame()
        host_with_cgroups(tmp_path, scale=3)
        second = source.next_frame()
    finally:
        source.close()
    return roots, [first, second]


def with_issuers(frame: Frame, source: str, share: CgroupShare) -> Frame:
    issuers = IssuersFrame(source, cgroups=MappingProxyType({"sda": (share,)}))
    return dataclasses.replace(frame, parts={"issuers": issuers})


def test_the_split_text_follows_each_device_with_its_traced_latency(tmp_path: Path) -> None:
    frame = cgroup_frames(tmp_path)[1][1]
    assert frame.cgroups is not None
    plain = device_split_text(frame.cgroups, POSTGRES)
    assert "\n  sda " in plain and "p50/p99" not in plain
    traced = device_split_text(
        frame.cgroups, POSTGRES, issuers=with_issuers(frame, TRACER, TRACED).get(IssuersPart)
    )
    lines = traced.splitlines()
    sda = next(i for i, line in enumerate(lines) if line.startswith("  sda "))
    assert lines[sda + 1] == "    p50/p99 ms R 0.21/1.3  W 0.1/0.4"
    assert len(lines[sda + 1]) <= 40  # the side panel at 120 columns
    # An estimate (no tracer) or a recording's shares (latency unknown) add nothing.
    estimate = with_issuers(frame, ESTIMATE, TRACED).get(IssuersPart)
    assert device_split_text(frame.cgroups, POSTGRES, issuers=estimate) == plain
    unknown = dataclasses.replace(TRACED, read=LatencyFigures(), write=LatencyFigures())
    recorded = with_issuers(frame, TRACER, unknown).get(IssuersPart)
    assert device_split_text(frame.cgroups, POSTGRES, issuers=recorded) == plain


async def test_the_cgroups_tab_shows_the_latency_of_the_selected_cgroup_per_device(
    tmp_path: Path,
) -> None:
    roots, frames = cgroup_frames(tmp_path)
    frames[1] = with_issuers(frames[1], TRACER, TRACED)
    timeline = fill(FrameStore(5, 1.0), frames)
    app = make_replay_app(roots, timeline, frames[1].wall_time)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(
            pilot,
            lambda: getattr(app.main_screen.shown_frame, "wall_time", 0) == frames[1].wall_time,
        )
        await pilot.press("C")
        await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
        panel = app.main_screen.query_one(CgroupPanel)
        await wait_for(pilot, lambda: panel.last is not None and bool(panel.cgroup_list.rows))
        panel.cgroup_list.move_cursor([r.path for r in panel.cgroup_list.rows].index(POSTGRES))
        split = panel.query_one("#cgroup-devices")
        await wait_for(
            pilot,
            lambda: "p50/p99 ms R 0.21/1.3" in str(split.render()),
            "the latency under sda",
        )
        assert "W 0.1/0.4" in str(split.render())
