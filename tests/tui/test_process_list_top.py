"""#17 item 1: "The process list drifts off the top I/O consumers ... the cursor sticks to a
PID". The list keeps its sort order every tick, stays on the top unless the user moved to a
process, and then follows that process."""

from __future__ import annotations

import functools

from textual.app import App, ComposeResult

from iotop_plus.tui.process_rows import ProcessRow
from iotop_plus.tui.widgets.process_panel import ProcessList


def _rows(*busiest_first: int) -> list[ProcessRow]:
    return [
        ProcessRow(
            (pid, pid), pid, "root", f"cmd{pid}", 1000.0 * (10 - i), 0.0, 0.0, 0.0, 0.0, True
        )
        for i, pid in enumerate(busiest_first)
    ]


class _Host(App[None]):
    def compose(self) -> ComposeResult:
        yield ProcessList(id="procs")


async def test_the_cursor_stays_on_the_top_consumer_until_the_user_moves() -> None:
    app = _Host()
    async with app.run_test(size=(60, 12)) as pilot:
        plist = app.query_one(ProcessList)
        plist.focus()
        plist.set_rows(_rows(1, 2, 3))
        assert plist.current is not None and plist.current.pid == 1
        # Process 1 goes idle and sinks: the cursor stays on the top row, now process 3.
        plist.set_rows(_rows(3, 2, 1))
        await pilot.pause()
        assert plist.cursor == 0 and plist.current is not None and plist.current.pid == 3
        # The user moves to process 2: now it is followed wherever it sorts.
        await pilot.press("down")
        assert plist.current is not None and plist.current.pid == 2
        plist.set_rows(_rows(2, 1, 3))
        assert plist.current is not None and plist.current.pid == 2
        plist.set_rows(_rows(1, 3, 2))
        assert plist.current is not None and plist.current.pid == 2 and plist.cursor == 2
        # It exits: back to the top, and the top is kept again.
        plist.set_rows(_rows(3, 1))
        assert plist.cursor == 0 and plist.current is not None and plist.current.pid == 3
        plist.set_rows(_rows(1, 3))
        assert plist.current is not None and plist.current.pid == 1
        # Home (back on the top row) also means "keep the top".
        await pilot.press("down", "home")
        plist.set_rows(_rows(3, 1))
        assert plist.current is not None and plist.current.pid == 3


async def test_the_side_panel_takes_a_share_of_the_width_so_wide_screens_show_more_columns() -> (
    None
):
    """#17 item 2: "The side panel is fixed at 42 columns ... USER and IO% are hidden"."""
    from tests.tui.canned import canned_app
    from tests.tui.helpers import started, wait_for

    widths = {}
    for size in ((120, 36), (200, 50)):
        app = canned_app()
        async with app.run_test(size=size) as pilot:
            await started(pilot, app)
            panel = app.main_screen.query_one("#side-panel")
            widths[size[0]] = panel.size.width
            assert panel.size.width >= 41  # 42 with its border
            await pilot.press("p")  # the Processes tab: half the screen, up to 92
            before = widths[size[0]]
            wider = functools.partial(lambda p, w: p.size.width > w, panel, before)
            await wait_for(pilot, wider, "a wider panel")
            if size[0] == 200:
                header = ProcessList().header_text(panel.size.width - 2)
                for title in ("USER", "IO%", "CGROUP", "COMMAND"):
                    assert title in header, header
    assert widths[200] > widths[120] + 20


class _CgroupHost(App[None]):
    def compose(self) -> ComposeResult:
        from iotop_plus.tui.widgets.cgroup_panel import CgroupList

        yield CgroupList(id="cgroups")


async def test_the_cgroup_list_keeps_the_top_too_and_follows_only_a_chosen_cgroup() -> None:
    """The Cgroups list had the same drift as the process list: its cursor stuck to the
    cgroup it first landed on wherever that sorted. Both lists now share one rule."""
    from iotop_plus.tui.cgroup_rows import CgroupRow
    from iotop_plus.tui.widgets.cgroup_panel import CgroupList

    def rows(*paths: str) -> list[CgroupRow]:
        return [
            CgroupRow(p, p, 1, 1000.0 * (9 - i), 0.0, 1.0, 0.0, 0.0, None, None, "")
            for i, p in enumerate(paths)
        ]

    app = _CgroupHost()
    async with app.run_test(size=(60, 12)) as pilot:
        clist = app.query_one(CgroupList)
        clist.focus()
        clist.set_rows(rows("/a", "/b", "/c"))
        clist.set_rows(rows("/c", "/b", "/a"))
        assert clist.current is not None and clist.current.path == "/c"  # the top, not /a
        await pilot.press("down")  # onto /b
        clist.set_rows(rows("/a", "/c", "/b"))
        assert clist.current is not None and clist.current.path == "/b"  # chosen: followed
