"""Untrusted names in the TUI: device names, dm names, backing files and process names that
hold markup (``[/]``, ``[bold]``) or terminal escapes are shown literally, never parsed.

Before the fix, ``[/]`` in any of them raised MarkupError and ended the app.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.tui.app import IotopPlusApp, make_app
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.header import HostHeader
from tests.support.frames import StepClock
from tests.support.hostile_host import CGROUP, hostile_host, printable_bytes
from tests.tui import host_tree
from tests.tui.helpers import started, step, step_to, table, table_lines, wait_for

DISK = "sd[bold]q\x1b[31m"
"""A disk whose kernel name holds markup and an escape (a directory name can hold both)."""
DM_NAME = "[/]evil[bold]\x1b[31mRED"
BACKING = "/img/[/]x[bold]\x1b[2J.img"
GHOST = "[/]ghost"
"""Only in diskstats: a directory name cannot hold ``/``."""
HOSTNAME = "host[/]\x1b]0;pwned\x07"


def hostile_tree(base: Path) -> Roots:
    """The tui_host fixture plus devices with hostile names."""
    host_tree.build(base)
    proc, sysfs = base / "proc", base / "sys"
    extra = {DISK: (8, 48), "dm-1": (253, 1), "loop1": (7, 1), GHOST: (250, 0)}
    lines = [
        f"{major:4d} {minor:7d} {name} 10 0 80 1 5 0 40 1 0 2 2 0 0 0 0 0 0"
        for name, (major, minor) in extra.items()
    ]
    with open(proc / "diskstats", "a") as fh:
        fh.write("\n".join(lines) + "\n")
    for name, (major, minor) in extra.items():
        if name == GHOST:
            continue
        d = sysfs / "block" / name
        (d / "queue").mkdir(parents=True)
        (d / "dev").write_text(f"{major}:{minor}\n")
        (d / "size").write_text("2048\n")
        (d / "queue" / "rotational").write_text("0\n")
        (d / "queue" / "read_ahead_kb").write_text("128\n")
        (d / "holders").mkdir()
        (d / "slaves").mkdir()
        os.symlink(f"../../block/{name}", sysfs / "class" / "block" / name)
    (sysfs / "block" / "dm-1" / "dm").mkdir()
    (sysfs / "block" / "dm-1" / "dm" / "name").write_text(DM_NAME + "\n")
    (sysfs / "block" / "loop1" / "loop").mkdir()
    (sysfs / "block" / "loop1" / "loop" / "backing_file").write_text(BACKING + "\n")
    (proc / "sys" / "kernel" / "hostname").write_text(HOSTNAME + "\n")
    return Roots(proc, sysfs)


def shown(widget: Widget) -> str:
    """What ``widget`` shows on screen, as text."""
    width, height = widget.size
    return "\n".join(s.text for s in widget.render_lines(Region(0, 0, width, height)))


def flat(text: str) -> str:
    """Shown text with wrapped lines joined again (long values fold in the panel)."""
    return re.sub(r"\s*\n\s*", "", text)


def literal(text: str) -> str:
    """``text`` as the screen shows it: control characters as ``\\xNN``."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c for c in text)


async def test_hostile_device_names_show_literally(tmp_path: Path) -> None:
    roots = hostile_tree(tmp_path / "host")
    app = make_app(roots, Config(interval=0.25, show_all=True))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert {DISK, "dm-1", "loop1", GHOST} <= set(t.visible_names())
        screen_text = "\n".join(table_lines(app))
        assert "\x1b" not in screen_text
        for label in (literal(DISK)[:14], literal(DM_NAME)[:14], GHOST):  # the column is narrow
            assert label in screen_text, screen_text
        assert literal(HOSTNAME) in shown(app.main_screen.query_one(HostHeader))
        for name, expected in ((DISK, literal(DISK)), ("dm-1", literal(DM_NAME))):
            assert t.select_name(name)

            def on_it(n: str = name) -> bool:
                return app.main_screen.selected_device == n

            await wait_for(pilot, on_it)
            panel = app.main_screen.query_one("#device-facts", Static)

            def facts_say(e: str = expected, p: Widget = panel) -> bool:
                return e in flat(shown(p))

            await wait_for(pilot, facts_say, "the facts")
            caption = app.main_screen.query_one(DeviceCharts)  # the caption is drawn in it

            def caption_says(n: str = name, c: Widget = caption) -> bool:
                return literal(n) in shown(c)

            await wait_for(pilot, caption_says, "the caption")
        assert t.select_name("loop1")
        facts = app.main_screen.query_one("#device-facts", Static)
        await wait_for(pilot, lambda: literal(BACKING) in flat(shown(facts)))
        # The Tune tab names the device in its heading.
        await pilot.press("3")
        await app.main_screen.run_action("panel_tab('tab-tune')")
        await wait_for(pilot, lambda: bool(app.main_screen.query("#settings-device")), "the tab")
        heading = app.main_screen.query_one("#settings-device", Static)
        await wait_for(pilot, lambda: "Queue settings of loop1" in shown(heading), "the heading")
        assert t.select_name(DISK)
        await wait_for(pilot, lambda: literal(DISK) in shown(heading))
    assert app.return_code in (None, 0)


async def test_a_real_cgroup_process_and_mount_with_any_bytes_show_escaped(
    tmp_path: Path, step_clock: StepClock
) -> None:
    """Root: a cgroup, a process and a mount point named with bytes that are not UTF-8, ESC,
    BEL and C1, the process reading our loop device from the cgroup: every tab shows them
    escaped, with no control character on screen, and the app keeps running."""
    with hostile_host(tmp_path) as host:
        app = make_app(Roots(), Config(interval=0.25, show_all=True))
        async with app.run_test(size=(200, 60)) as pilot:
            await started(pilot, app)
            t = table(app)
            await step_to(pilot, app, lambda: host.device in t.visible_names(), "the device")
            assert t.select_name(host.device)
            screen = app.main_screen
            await screen.run_action("panel_tab('tab-cgroups')")
            cgroup = printable_bytes(CGROUP)[:20]  # the column is narrow
            await step_to(pilot, app, lambda: cgroup in everything(app), "the cgroup escaped")
            await screen.run_action("panel_tab('tab-processes')")
            await step_to(pilot, app, lambda: "ux-\\xff\\xfe" in everything(app), "its process")
            await screen.run_action("panel_tab('tab-device')")
            await step_to(pilot, app, lambda: "mnt-\\xff" in everything(app), "the mount escaped")
            text = everything(app)
            assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]", text), text
        assert app.return_code in (None, 0)


def everything(app: IotopPlusApp) -> str:
    """The text of the whole screen as the terminal would show it."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


COMM_SETTER = """
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME
time.sleep(60)
"""


@pytest.fixture
def renamed() -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours whose comm is ``[/]x`` and whose arguments hold ``[/]x`` and ESC."""
    proc = subprocess.Popen([sys.executable, "-c", COMM_SETTER, "[/]x", "\x1b[31mRED"])
    try:
        comm = Path(f"/proc/{proc.pid}/comm")
        for _ in range(100):
            if comm.read_text().strip() == "[/]x":
                break
            subprocess.run(["sleep", "0.05"], check=True)
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


async def test_a_process_named_with_markup_shows_in_the_processes_tab(
    renamed: subprocess.Popen[bytes],
) -> None:
    app: IotopPlusApp = make_app(Roots(), Config(interval=0.25))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(pilot, app)
        await app.main_screen.run_action("panel_tab('tab-processes')")
        panel = app.main_screen.panels.process_panel
        await wait_for(pilot, lambda: panel.is_mounted and bool(panel.query("ProcessList")))
        await step_to(
            pilot, app, lambda: renamed.pid in [r.pid for r in panel.process_list.rows], "its row"
        )
        panel.process_list.focus()
        await pilot.pause()
        await pilot.press("f", "left_square_bracket", "slash", "right_square_bracket", "x")
        await pilot.press("enter")
        await step_to(
            pilot,
            app,
            lambda: [r.pid for r in panel.process_list.rows] == [renamed.pid],
            "it alone",
        )
        status = shown(panel.query_one("#process-status", Static))
        assert "filter '[/]x'" in " ".join(status.split())  # the status line may wrap
        row = shown(panel.process_list)
        assert str(renamed.pid) in row and "\x1b" not in row
        await pilot.press("enter")  # the threads: their comm is "[/]x"
        await wait_for(
            pilot, lambda: "Open files" in panel.detail_text() or "No open" in panel.detail_text()
        )
        assert f"{renamed.pid:>7}" in panel.detail_text() and "[/]x" in panel.detail_text(), (
            panel.detail_text()
        )
        detail = shown(panel.query_one("#process-detail", Static))
        assert "[/]x" in detail, detail
    assert app.return_code in (None, 0)


async def test_a_400_digit_counter_is_a_reported_bad_line_not_a_failed_tick(
    tmp_path: Path, step_clock: StepClock
) -> None:
    """Before: the rates of a 400-digit delta overflowed float(): every tick failed, so no
    device had figures. Now that line is skipped and named in the header; the rest shows."""
    roots = hostile_tree(tmp_path / "host")
    diskstats = roots.proc / "diskstats"
    good = diskstats.read_text()
    app = make_app(roots, Config(interval=0.25, show_all=True))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(pilot, app, ticks=1)
        for digits in (400, 401):  # the counter grows by ~9e400 per sample
            huge = "9" * digits
            diskstats.write_text(good + f"   8 64 sdhuge 1 0 {huge} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
            await step(pilot, app, 2)
        header = shown(app.main_screen.query_one(HostHeader))
        assert "1 bad line(s)" in header and "counter above" in header, header
        assert "sdhuge" not in table(app).visible_names()
        assert app.latest_frame is not None and app.latest_frame.rates.get("sda") is not None
    assert app.return_code in (None, 0)


async def test_a_fifo_as_diskstats_is_an_error_on_screen_not_a_hung_sampler(
    tmp_path: Path,
) -> None:
    roots = hostile_tree(tmp_path / "host")
    (roots.proc / "diskstats").unlink()
    os.mkfifo(roots.proc / "diskstats")
    app = make_app(roots, Config(interval=0.25))
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_for(
            pilot,
            lambda: any("not a regular file (a FIFO)" in n.message for n in app._notifications),
            timeout=3,
        )
        header = app.main_screen.query_one(HostHeader)
        assert "sampling failed" in header.note and "FIFO" in header.note


async def test_the_sysfs_fallback_is_said_once_in_a_notification(tmp_path: Path) -> None:
    roots = hostile_tree(tmp_path / "host")
    (roots.proc / "diskstats").unlink()
    for name in ("sda", "nvme0n1"):
        (roots.sys / "block" / name / "stat").write_text("10 0 80 1 5 0 40 1 0 2 2\n")
    app = make_app(roots, Config(interval=0.25))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(pilot, app, ticks=3)
        notes = [n.message for n in app._notifications if "/stat instead" in n.message]
        assert len(notes) == 1, notes
        assert "diskstats: No such file or directory" in notes[0]
