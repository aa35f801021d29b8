"""History and replay show the frame's processes and cgroups never the live ones.

Before: the Cgroups and Processes tabs ignored a frame without their part, so scrubbing back
left the live figures under a HISTORY header, and a replay of a recording without cgroups
said "waiting for the first sample" forever. Now a frame of the history or a replay shows
what it carries, or says it was not recorded.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.config import Config
from iotop_plus.record.collect import recorded_sample
from iotop_plus.record.recorded_who import CommandLines, WhoParts
from iotop_plus.record.recorder import Recorder
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import PROCESSES, Frame, ProcessFrame
from iotop_plus.sampling.processes.issuers import IssuersFrame
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.tui.app import IotopPlusApp, make_app
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.widgets.cgroup_panel import NOT_RECORDED, CgroupPanel
from iotop_plus.tui.widgets.process_panel import NOT_RECORDED as NO_PROCESSES
from iotop_plus.tui.widgets.process_panel import ProcessPanel
from tests.support.frames import StepClock
from tests.support.idle import idle_processes
from tests.support.old_recordings import STEP, copy_as_directory
from tests.support.old_recordings import T0 as OLD_T0
from tests.support.synthetic import SyntheticTree
from tests.tui.canned import HOST_ROOTS, canned_app
from tests.tui.helpers import started, step, wait_for
from tests.tui.history_frames import before_live, fill
from tests.tui.test_cgroup_panel import app_on, host_with_cgroups

POSTGRES = "/system.slice/postgresql.service"
T0 = 1_700_000_000.0


def cgroup_panel(app) -> CgroupPanel:
    return app.main_screen.query_one(CgroupPanel)


def shown_read(panel: CgroupPanel, path: str) -> float | None:
    rows = {r.path: r for r in panel.cgroup_list.rows}
    return rows[path].read if path in rows else None


async def test_scrubbed_back_the_cgroups_tab_shows_the_recorded_frame(
    step_clock: StepClock, tmp_path: Path
) -> None:
    roots = host_with_cgroups(tmp_path)
    app = app_on(roots)
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)  # two frames without cgroups (nobody wanted them)
        await pilot.press("C")
        await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
        p = cgroup_panel(app)
        await wait_for(pilot, lambda: p.last is not None)
        for scale in (2, 7):  # two frames with rates: the second's are bigger
            host_with_cgroups(tmp_path, scale=scale)
            await step(pilot, app)
            await wait_for(pilot, lambda: (shown_read(p, POSTGRES) or 0) > 0)
        live = app.latest_frame
        assert live is not None and live.cgroups is not None
        live_read = shown_read(p, POSTGRES)
        # Live, the selected cgroup's I/O per device (the split of its figures).
        p.cgroup_list.move_cursor([r.path for r in p.cgroup_list.rows].index(POSTGRES))
        await pilot.pause()
        split = str(p.query_one("#cgroup-devices").render())
        assert split.startswith("postgresql.service per device") and "\n  sda " in split
        await pilot.press("left_square_bracket")
        shown = app.main_screen.shown_frame
        assert shown is not None and shown.wall_time < live.wall_time
        assert shown.cgroups is not None
        rates = shown.cgroups.rates[POSTGRES]
        assert rates is not None
        await wait_for(pilot, lambda: shown_read(p, POSTGRES) == rates.total.read_bps)
        assert shown_read(p, POSTGRES) != live_read
        assert "recorded (those with I/O or limits)" in p.status_text()
        # Only the cgroups that did I/O are kept in history (the idle ones are not there).
        assert all(r.active for r in p.cgroup_list.rows)
        # The selected cgroup's split per device, from the recorded frame.
        paths = [r.path for r in p.cgroup_list.rows]
        p.cgroup_list.move_cursor(paths.index(POSTGRES))
        await pilot.pause()
        assert "sda" in str(p.query_one("#cgroup-devices").render())
        # Back before the tab was open: those frames carry no cgroups.
        while (frame := app.main_screen.shown_frame) is not None and frame.cgroups is not None:
            await pilot.press("left_square_bracket")
        assert p.status_text() == NOT_RECORDED
        assert p.cgroup_list.rows == []
        await pilot.press("l")  # live again: the live frame's cgroups
        await wait_for(pilot, lambda: shown_read(p, POSTGRES) == live_read)
        assert "recorded (" not in p.status_text()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Three real processes with the same comm and their own command lines."""
    with idle_processes(*([f"--name=who-{n}"] for n in "abc")) as procs:
        yield procs


def _busy(part: ProcessFrame | None, pids: list[int]) -> ProcessFrame | None:
    """``part`` with ``pids`` the only processes doing I/O (the ring keeps the busiest)."""
    if part is None:
        return None
    rates = {
        key: dataclasses.replace(r, read_bps=1.0) if key[0] in pids else r
        for key, r in part.rates.items()
        if r is not None
    }
    return dataclasses.replace(part, rates=MappingProxyType(rates))


def _with_processes(frames: list[Frame], pids: list[int]) -> list[Frame]:
    """The frames, the later ones carrying this host's real processes (``pids`` busy)."""
    source = LiveSource(Roots(), devices=False)
    source.want(PROCESSES, True)
    try:
        parts = [_busy(source.next_frame().processes, pids) for _ in frames]
    finally:
        source.close()
    half = len(frames) // 2
    return frames[:half] + [
        dataclasses.replace(f, processes=part)
        for f, part in zip(frames[half:], parts[half:], strict=True)
    ]


async def test_scrubbed_back_the_processes_tab_shows_the_recorded_frame(
    step_clock: StepClock, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    app = canned_app(Config(interval=10.0, history_minutes=60.0))
    frames = _with_processes(before_live(6), [p.pid for p in sleepers])
    fill(app.store, frames)
    async with app.run_test(size=(200, 50)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        panel = app.main_screen.query_one(ProcessPanel)
        await wait_for(pilot, lambda: panel.last is not None)
        # The canned host has no processes: the live list is empty.
        assert panel.process_list.rows == []
        live = app.main_screen.shown_frame
        assert live is not None
        for _ in range(app.frames_received):  # back past the live frames to the last filled
            await pilot.press("left_square_bracket")
            if getattr(app.main_screen.shown_frame, "wall_time", None) == frames[-1].wall_time:
                break
        assert app.main_screen.shown_frame.wall_time == frames[-1].wall_time  # type: ignore[union-attr]
        wanted = {f"--name=who-{n}" for n in "abc"}
        await wait_for(
            pilot,
            lambda: wanted <= {w for r in panel.process_list.rows for w in r.command.split()},
            "the recorded processes",
        )
        assert "HISTORY" in app.main_screen.scrubber.mode.upper()
        await pilot.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
        shown = app.main_screen.shown_frame
        assert shown is not None and shown.wall_time == frames[2].wall_time
        assert shown.processes is None
        await wait_for(pilot, lambda: panel.status_text() == NO_PROCESSES)
        assert panel.process_list.rows == []


def _record(tmp_path: Path, pids: list[int]) -> Path:
    """A recording of a synthetic host: the recorder's own samples, with the N and C parts."""
    tree = SyntheticTree(tmp_path / "disks", 2)
    source = LiveSource(tree.roots)
    procs = LiveSource(Roots(), devices=False)
    procs.want(PROCESSES, True)
    rec = tmp_path / "rec"
    rec.mkdir()
    who = WhoParts(CommandLines(), cgroups=True)
    samples = []
    try:
        for k in range(4):
            tree.advance(1.0)
            frame = source.next_frame()
            frame = dataclasses.replace(
                frame,
                sample=dataclasses.replace(frame.sample, wall_time=T0 + k),
                processes=procs.next_frame().processes,
            )
            if frame.processes is not None:  # these are the top ones
                rates = {
                    key: dataclasses.replace(r, read_bps=1.0)
                    for key, r in frame.processes.rates.items()
                    if key[0] in pids and r is not None
                }
                frame = dataclasses.replace(
                    frame, processes=dataclasses.replace(frame.processes, rates=rates)
                )
            rs = recorded_sample(frame, Roots(), 20)
            samples.append(who.add(rs, frame, k, k > 0))
    finally:
        source.close()
        procs.close()
    recorder = Recorder(rec, lambda: {"host": "synthetic", "zone": "UTC", "inventory": []})
    for rs in samples:
        recorder.write(rs)
    recorder.close()
    return rec


async def test_a_version_3_replay_says_not_recorded_on_the_cgroups_tab(tmp_path: Path) -> None:
    """A file of version 3 or older (tests/fixtures/recordings) has no cgroups."""
    timeline = open_timeline(copy_as_directory(3, tmp_path / "rec"))
    app = make_replay_app(Roots(), timeline, OLD_T0 + 3 * STEP)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame is not None)
        await pilot.press("C")
        await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
        p = cgroup_panel(app)
        await wait_for(pilot, lambda: p.status_text() == NOT_RECORDED, "not recorded")
        await pilot.press("left_square_bracket")  # every frame of the file says so
        await wait_for(pilot, lambda: p.status_text() == NOT_RECORDED, "not recorded")
    timeline.close()


async def test_a_replay_shows_each_recorded_processs_command_line(
    sleepers: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    rec = _record(tmp_path, [p.pid for p in sleepers])
    timeline = open_timeline(rec)
    app = make_replay_app(Roots(), timeline, T0 + 3)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.main_screen.shown_frame is not None)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        panel = app.main_screen.query_one(ProcessPanel)
        await wait_for(pilot, lambda: len(panel.process_list.rows) == 3, "three processes")
        commands = sorted(r.command for r in panel.process_list.rows)
        assert [c.split()[-1] for c in commands] == ["--name=who-a", "--name=who-b", "--name=who-c"]
    timeline.close()


def test_the_help_says_what_history_and_replay_show_of_the_who() -> None:
    from iotop_plus.tui.screens.help import help_text

    text = help_text()
    assert "History and replay: the Processes and Cgroups tabs show" in text
    assert "'not recorded'" in text


async def test_scrubbed_back_this_device_only_shows_the_recorded_issuers(
    step_clock: StepClock, sleeper: subprocess.Popen[bytes]
) -> None:
    from tests.tui.test_who_this_device import WhoSource, pids, who

    iops = {"now": 2500.0}

    def issuers() -> IssuersFrame:
        frame = who(sleeper.pid)
        devices = {
            name: tuple(dataclasses.replace(i, r_s=iops["now"]) if i.pid == sleeper.pid else i
                        for i in entries)
            for name, entries in frame.devices.items()
        }  # fmt: skip
        return dataclasses.replace(frame, devices=MappingProxyType(devices))

    source = WhoSource(issuers)
    app = make_app(HOST_ROOTS, Config(interval=10.0), source=source)
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)  # frames without issuers (nobody wanted them)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        panel = app.main_screen.query_one(ProcessPanel)
        # A frame with the processes but no issuers yet, the one the scrub-back ends on (the
        # frames before the tab was opened have no processes, and say so instead).
        await step(pilot, app)
        await wait_for(pilot, lambda: panel.last is not None, "the processes")
        await pilot.press("v")
        await step(pilot, app, 2)
        await wait_for(pilot, lambda: pids(panel)[:1] == [sleeper.pid], "the device's issuers")
        assert "2500" in panel.process_list.render_line(1).text
        iops["now"] = 777.0  # the live frame's issuers differ from the recorded ones
        await step(pilot, app)
        await wait_for(pilot, lambda: "777" in panel.process_list.render_line(1).text)
        await pilot.press("left_square_bracket")
        assert app.main_screen.scrubber.mode == "history"
        # The recorded frame's issuers (the sleeper does no I/O of its own: the ring keeps
        # the processes among the issuers next to the busiest ones).
        await wait_for(pilot, lambda: "2500" in panel.process_list.render_line(1).text)
        assert pids(panel)[:1] == [sleeper.pid]
        while (frame := app.main_screen.shown_frame) is not None and frame.get(
            IssuersPart
        ) is not None:
            await pilot.press("left_square_bracket")
            # One frame back before looking again: a look at the frame still shown pressed
            # once too often, at the oldest frame the status says something else.
            await wait_for(pilot, partial(moved_from, app, frame), "one frame back")
        device = app.main_screen.selected_device
        await wait_for(pilot, lambda: f"v: issuers of {device} not recorded" in panel.status_text())


def moved_from(app: IotopPlusApp, frame: object) -> bool:
    """The main screen shows another frame than ``frame``."""
    return app.main_screen.shown_frame is not frame
