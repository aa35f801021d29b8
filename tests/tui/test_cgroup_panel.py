"""The Cgroups tab: `C` from anywhere, the tree with roll-up, sort, filter, a cgroup's processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import CGROUPS
from iotop_plus.tui.app import make_app
from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel
from iotop_plus.tui.widgets.side_panel import SidePanel
from tests.support.cgroup_trees import DOCKER_ID, remove_live_cgroup, systemd_tree
from tests.tui.canned import FIXTURES, CannedSampler
from tests.tui.helpers import started, wait_for

NGINX = "/system.slice/nginx.service"


def host_with_cgroups(tmp_path: Path, scale: int = 1) -> Roots:
    """tui_host (canned disks) plus the v2 systemd/docker/kubernetes cgroup tree."""
    base = tmp_path / "host"
    if not base.exists():
        shutil.copytree(FIXTURES / "tui_host", base, symlinks=True)
    tree = tmp_path / f"tree{scale}"
    systemd_tree(tree, scale=scale)
    shutil.copytree(tree / "sys/fs/cgroup", base / "sys/fs/cgroup", dirs_exist_ok=True)
    for pid in ("4242", "4343", "4344", "5000"):
        shutil.copytree(tree / "proc" / pid, base / "proc" / pid, dirs_exist_ok=True)
    return Roots(base / "proc", base / "sys")


def app_on(roots: Roots):
    sampler = CannedSampler(roots)
    return make_app(roots, Config(interval=10.0), sampler=sampler, host=sampler.host_info())


def panel(app) -> CgroupPanel:
    return app.main_screen.query_one(CgroupPanel)


async def test_capital_c_opens_the_tree_with_names_and_rates(tmp_path: Path) -> None:
    roots = host_with_cgroups(tmp_path)
    app = app_on(roots)
    async with app.run_test(size=(140, 40)) as pilot:
        await started(pilot, app)
        assert not app.source.wants(CGROUPS)  # nobody pays for cgroups until the tab shows
        await pilot.press("C")
        await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
        p = panel(app)
        assert app.main_screen.query_one("#side-panel", SidePanel).active == "tab-cgroups"
        await wait_for(pilot, lambda: p.last is not None)
        assert app.source.wants(CGROUPS)
        rows = p.cgroup_list.rows
        names = [r.name for r in rows]
        # A tree: the root first, each cgroup right under its parent (no rates yet: by path).
        assert names[:3] == ["/", "kubepods.slice", "kubepods-besteffort.slice"]
        assert f"docker {DOCKER_ID[:12]}" in names
        assert rows[names.index("postgresql.service")].depth == 2
        # New counters, and a frame now: rates (the subtree's) per row.
        host_with_cgroups(tmp_path, scale=2)
        app.feed.thread.sample_now()
        await wait_for(pilot, lambda: any(r.read for r in p.cgroup_list.rows))
        names = [r.name for r in p.cgroup_list.rows]
        assert names[:3] == ["/", "system.slice", "postgresql.service"]  # busiest first
        by_path = {r.path: r for r in p.cgroup_list.rows}
        assert by_path["/system.slice"].read == max(
            r.read or 0 for r in p.cgroup_list.rows if r.path.startswith("/system.slice")
        )
        pg = by_path["/system.slice/postgresql.service"]
        assert pg.some == 1.5 and pg.full == 0.5
        assert pg.limits == "rbps=2M@sda wiops=120@sda w=200 w=300@sda lat=75ms@sda"
        line = p.cgroup_list.render_line(0).text
        # The side panel is 42 columns here (below 150): the name, READ, WRITE and io some.
        assert line.split() == ["CGROUP", "READ▼", "WRITE▼", "SOME"]
        assert "Figures include each cgroup's children." in p.status_text()


async def test_sort_filter_and_a_cgroups_processes(tmp_path: Path) -> None:
    app = app_on(host_with_cgroups(tmp_path))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("C")
        await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
        p = panel(app)
        await wait_for(pilot, lambda: p.last is not None)
        p.cgroup_list.focus()
        await pilot.press("right")  # sort by name (A-Z)
        assert p.cgroup_list.sort == "name" and not p.cgroup_list.descending
        top = [r.name for r in p.cgroup_list.rows if r.depth == 1]
        assert top == sorted(top, key=str.lower)
        await pilot.press("f", *"nginx", "enter")
        assert [r.path for r in p.cgroup_list.rows] == ["/", "/system.slice", NGINX]
        p.cgroup_list.move_cursor(2)
        await pilot.press("enter")
        assert app.source.detail_cgroup == NGINX
        members = p.query_one("#cgroup-members")
        await wait_for(pilot, lambda: "4343 nginx" in str(members.render()))
        assert "limits: none" in str(members.render())
        await pilot.press("escape")
        assert app.source.detail_cgroup is None
        # Leaving the tab stops the cgroup reads.
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.source.wants(CGROUPS))


async def test_c_at_80x24_shows_the_panel_and_a_host_without_cgroups_says_why() -> None:
    from tests.tui.canned import canned_app

    app = canned_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        await pilot.press("C")
        await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
        assert app.main_screen.layout_views.view == "view-panel"
        p = panel(app)
        await wait_for(pilot, lambda: p.last is not None)
        assert p.cgroup_list.rows == []
        assert "no cgroup tree with I/O figures under" in p.status_text()
        # The panel has the whole width: every column but the limits.
        titles = p.cgroup_list.render_line(0).text.split()
        assert titles == ["CGROUP", "READ▼", "WRITE▼", "SOME", "FULL", "R/s", "W/s", "DISC"]


async def test_c_works_from_the_processes_tab_with_its_filter_open() -> None:
    """Regression: the hidden tab's open filter box took the focus and switched back."""
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from tests.tui.canned import canned_app

    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
        app.main_screen.query_one(ProcessPanel).process_list.focus()
        await pilot.pause()
        await pilot.press("f", "x", "enter")
        await pilot.press("C")
        await pilot.pause()
        assert app.main_screen.query_one("#side-panel", SidePanel).active == "tab-cgroups"


@pytest.mark.root  # makes a real blkio cgroup
async def test_the_processes_view_names_each_processs_cgroup(tmp_path: Path) -> None:
    """A process moved into a v1 blkio child cgroup shows that cgroup in the CGROUP column."""
    import os
    import subprocess
    import sys

    from tests.support.frames import step_until
    from tests.tui.test_process_panel import Host, pids

    blkio = Path("/sys/fs/cgroup/blkio")
    if os.geteuid() != 0 or not (blkio / "cgroup.procs").exists():
        import pytest

        pytest.skip("needs root and a v1 blkio hierarchy")
    child = blkio / f"iotop-plus-test-{os.getpid()}"
    child.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (child / "cgroup.procs").write_text(f"{sleeper.pid}\n")
        app = Host()
        async with app.run_test(size=(110, 30)) as pilot:
            panel = app.panel
            # Frames come when the test steps the clock: the first has no rates, so no rows.
            await step_until(pilot, app.clock, lambda: sleeper.pid in pids(panel), "its row")
            plist = panel.process_list
            row = next(r for r in plist.rows if r.pid == sleeper.pid)
            assert row.cgroup == child.name
            assert "CGROUP" in plist.header_text(110)
            line = plist._line(plist._cells(row), 110)
            assert child.name[:16] in line
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)
        assert remove_live_cgroup(child), f"{child} not removed"
