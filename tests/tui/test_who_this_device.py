"""Who is hitting the selected device (#24 item 2 in the TUI): ``v`` on the Processes tab
keeps the selected device's issuers with their device latency, and the Device tab names the
top three. Frames are stepped by hand; the processes are this host's (a ``sleep`` the test
starts is the issuer), the issuers are the frame's part as the tracer would give it."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Iterator
from types import MappingProxyType

import pytest

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import PROCESSES, Frame
from iotop_plus.sampling.processes.issuers import (
    ESTIMATE,
    KERNEL,
    TRACER,
    Issuer,
    IssuersFrame,
    LatencyFigures,
)
from iotop_plus.sampling.processes.issuers_part import ISSUERS
from iotop_plus.tui.app import make_app
from iotop_plus.tui.keys import PANEL_KEYS, screen_clashes
from iotop_plus.tui.widgets.device_panel import DevicePanel
from iotop_plus.tui.widgets.process_panel import ProcessPanel
from tests.support.frames import StepClock
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.tui.helpers import started, step, wait_for


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def who(pid: int, estimate: bool = False) -> IssuersFrame:
    """The sleeper the busiest issuer of every device, then the flusher, two others and a
    loop device's worker."""
    fig = LatencyFigures(0.04, 0.12, 0.9)
    none = LatencyFigures()
    entries: tuple[Issuer, ...] = (
        Issuer(pid, "sleep", "sleep 300", "/jobs/a", "blkio", 2500.0, 0.0, 10000.0, 0.0, fig),
        Issuer(None, KERNEL, None, None, None, 0.0, 300.0, 0.0, 4800.0, none, fig, "writeback"),
        Issuer(1, "init", "/sbin/init", "/", "v2", 0.0, 12.0, 0.0, 48.0, none, fig),
        Issuer(2, "kthreadd", None, "/", "v2", 1.0, 0.0, 4.0, 0.0, fig),
        Issuer(None, KERNEL, None, None, None, 1.0, 0.0, 64.0, 0.0, fig, none, "loop", "loop3",
               "/jobs/a"),
    )  # fmt: skip
    if estimate:
        entries = tuple(dataclasses.replace(e, r_s=None, w_s=None) for e in entries)
    devices = MappingProxyType({name: entries for name in ("sda", "sdb", "nvme0n1", "dm-0")})
    return IssuersFrame(ESTIMATE if estimate else TRACER, devices, status="no tracer")


class WhoSource(LiveSource):
    """The TUI fixture host's disks, this host's processes, and issuers while wanted."""

    def __init__(self, issuers: Callable[[], IssuersFrame]) -> None:
        super().__init__(HOST_ROOTS, CannedSampler())
        self.issuers = issuers
        self.host_procs = LiveSource(Roots(), devices=False)
        self.host_procs.want(PROCESSES, True)

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        frame = super().next_frame(early)
        procs = self.host_procs.next_frame().processes if self.wants(PROCESSES) else None
        issuers = self.issuers() if self.wants(ISSUERS) else None
        return dataclasses.replace(frame, processes=procs, parts={"issuers": issuers})

    def close(self) -> None:
        self.host_procs.close()
        super().close()


def pids(panel: ProcessPanel) -> list[int]:
    return [r.pid for r in panel.process_list.rows]


async def test_v_keeps_the_selected_devices_issuers_with_their_latency(
    step_clock: StepClock, sleeper: subprocess.Popen[bytes]
) -> None:
    source = WhoSource(lambda: who(sleeper.pid))
    app = make_app(HOST_ROOTS, Config(interval=10.0), source=source)
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        panel = app.main_screen.query_one(ProcessPanel)
        await step(pilot, app, 2)  # rates need two process samples
        await wait_for(pilot, lambda: sleeper.pid in pids(panel), "the sleeper among all")
        assert len(pids(panel)) > 1 and not source.wants(ISSUERS)
        device = app.main_screen.selected_device
        assert device in ("sda", "sdb", "nvme0n1", "dm-0")
        await pilot.press("v")
        assert source.wants(ISSUERS)  # the tracer attributes requests only from now on
        await step(pilot, app)
        # Only the device's issuers (init is one too), busiest there first.
        await wait_for(pilot, lambda: pids(panel)[:1] == [sleeper.pid], "the device's issuers")
        assert set(pids(panel)) <= {sleeper.pid, 1, 2} and 1 in pids(panel)
        lines = panel.process_list.render_line(0).text
        assert "DEV IO/s" in lines and "p99 ms" in lines
        row = panel.process_list.render_line(1).text
        assert "2500" in row and "0.12" in row  # IOPS and p99 there (p50 when wider)
        status = panel.status_text()
        assert f"v: issuers of {device}" in status
        assert "kernel writeback 300 IO/s" in status
        assert "kernel loop (loop3 /jobs/a) 1 IO/s" in status  # each kind, for whom
        await pilot.press("v")
        assert not source.wants(ISSUERS)
        await step(pilot, app)
        await wait_for(pilot, lambda: len(pids(panel)) > 1, "every process again")
        assert "v: issuers" not in panel.status_text()


async def test_without_the_tracer_v_says_the_issuers_are_an_estimate(
    step_clock: StepClock, sleeper: subprocess.Popen[bytes]
) -> None:
    source = WhoSource(lambda: who(sleeper.pid, estimate=True))
    app = make_app(HOST_ROOTS, Config(interval=10.0), source=source)
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        panel = app.main_screen.query_one(ProcessPanel)
        await pilot.press("v")
        await step(pilot, app, 2)
        await wait_for(pilot, lambda: pids(panel)[:1] == [sleeper.pid], "the device's issuers")
        assert set(pids(panel)) <= {sleeper.pid, 1, 2}
        assert "estimated from /proc/PID/io" in panel.status_text()
        row = panel.process_list.render_line(1).text
        assert " - " in row  # no IOPS, no latency for an estimate


async def test_the_device_tab_names_the_top_three_issuers(
    step_clock: StepClock, sleeper: subprocess.Popen[bytes]
) -> None:
    source = WhoSource(lambda: who(sleeper.pid))
    app = make_app(HOST_ROOTS, Config(interval=10.0), source=source)
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        facts = app.main_screen.query_one(DevicePanel)
        await wait_for(pilot, lambda: "who:" in facts.text, "the who line")
        assert "who: not traced (the latency columns" in facts.text  # nothing asked yet
        source.want(ISSUERS, True)  # as the latency columns or v do
        await step(pilot, app)
        line = f"who: sleep[{sleeper.pid}] 2,500 IO/s p99 0.12 ms · kernel writeback 300 IO/s"
        await wait_for(pilot, lambda: line in facts.text, "the top issuers")
        assert "init[1] 12 IO/s p99 0.12 ms" in facts.text
        assert "kthreadd" not in facts.text  # the fourth is not named


async def test_v_is_a_panel_key_in_the_palette_and_help_without_clashes() -> None:
    assert any(c.keys == "v" and c.title == "Processes: this device only" for c in PANEL_KEYS)
    from iotop_plus.tui.screens.help import help_text

    text = help_text()
    assert "v This device" in text and "DEV IO/s" in text
    app = make_app(HOST_ROOTS, Config(interval=10.0), sampler=CannedSampler())
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        assert screen_clashes(app.main_screen) == []
        palette = [title for title, _, _ in app.main_screen.commands()]
        assert "Processes: this device only" in palette
