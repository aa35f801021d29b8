"""The Blocked tab: `B` from anywhere asks the frames for blocked tasks while it shows, lists
the groups in printable text and says what the kernel would not show."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import Static

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.blocked.model import BlockedGroup, BlockedTasks
from iotop_plus.tui.app import make_app
from iotop_plus.tui.widgets.blocked_panel import NOT_RECORDED, BlockedPanel
from iotop_plus.tui.widgets.side_panel import SidePanel
from tests.tui.canned import FIXTURES, CannedSampler
from tests.tui.helpers import started, wait_for

FROZEN = BlockedGroup(
    reason="frozen",
    wait="percpu_rwsem_wait",
    syscall="write",
    file="/data/\x1b[2Jtable.db",
    mount="/data",
    device="sda1",
    cgroup="/system.slice/pg.service",
    count=3,
    pids=(4242, 4343),
    oldest_s=12.0,
    comm="post\x07gres",
    disk="sda",
)
HIDDEN = BlockedGroup(
    reason="unknown",
    wait=None,
    syscall=None,
    file=None,
    mount=None,
    device=None,
    cgroup="/",
    count=1,
    pids=(1,),
    oldest_s=0.0,
    refused=("stack", "syscall", "wait"),
)


def app_on(roots: Roots):
    sampler = CannedSampler(roots)
    return make_app(roots, Config(interval=10.0), sampler=sampler, host=sampler.host_info())


async def test_capital_b_opens_the_groups_and_asks_for_them_only_while_shown(
    tmp_path: Path,
) -> None:
    roots = Roots(FIXTURES / "tui_host" / "proc", FIXTURES / "tui_host" / "sys")
    app = app_on(roots)
    async with app.run_test(size=(140, 40)) as pilot:
        await started(pilot, app)
        assert not app.source.wants("blocked")  # nobody pays for the scan until the tab shows
        await pilot.press("B")
        await wait_for(pilot, lambda: bool(app.main_screen.query(BlockedPanel)))
        tabs = app.main_screen.query_one("#side-panel", SidePanel)
        assert tabs.active == "tab-blocked"
        panel = app.main_screen.query_one(BlockedPanel)
        await wait_for(pilot, lambda: app.source.wants("blocked"), "the part wanted")
        panel.show_blocked(BlockedTasks((FROZEN, HIDDEN), 1000, 1.0, True), recorded=False)
        await pilot.pause()
        status = str(panel.query_one("#blocked-status", Static).render())
        body = str(panel.query_one("#blocked-groups", Static).render())
        assert status.startswith("Blocked: 4 threads in D of 1000")
        first = body.splitlines()[0]
        assert "frozen filesystem" in first and "write" in first
        assert "/data/\\x1b[2Jtable.db" in first and "on sda1" in first
        assert "pid 4242,4343 post\\x07gres" in first and "12s" in first
        assert "the kernel refused stack, syscall, wait of 1 blocked threads" in body
        assert not any(ord(c) < 32 and c != "\n" for c in status + body)
        panel.show_blocked(None, recorded=True)
        await pilot.pause()
        assert str(panel.query_one("#blocked-status", Static).render()) == NOT_RECORDED
        await pilot.press("I")  # the Device tab: the scan stops
        await wait_for(pilot, lambda: not app.source.wants("blocked"), "the part unwanted")


async def test_the_tab_shows_what_the_live_frames_read(tmp_path: Path) -> None:
    """The frames, not the test, carry the part: a thread in D in the host's /proc."""
    base = tmp_path / "host"
    shutil.copytree(FIXTURES / "tui_host", base, symlinks=True)
    task = base / "proc" / "777" / "task" / "777"
    task.mkdir(parents=True)
    fields = ["0"] * 40
    fields[17] = "1"  # num_threads
    stat = "777 (fsck\x1b[31m) D " + " ".join(fields[1:])
    (task / "stat").write_text(stat + "\n")
    (task / "schedstat").write_text("10 20 3\n")
    (task / "wchan").write_text("folio_wait_bit_common")
    (task / "cgroup").write_text("0::/system.slice/fsck.service\n")
    app = app_on(Roots(base / "proc", base / "sys"))
    async with app.run_test(size=(140, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("B")
        await wait_for(pilot, lambda: bool(app.main_screen.query(BlockedPanel)))
        panel = app.main_screen.query_one(BlockedPanel)
        groups = panel.query_one("#blocked-groups", Static)
        await wait_for(pilot, lambda: "page I/O" in str(groups.render()), "the frame's groups")
        body = str(groups.render())
        assert "pid 777 fsck\\x1b[31m" in body and "cgroup /system.slice/fsck.service" in body
        assert "wait folio_wait_bit_common" in body
        assert not any(ord(c) < 32 and c != "\n" for c in body)
