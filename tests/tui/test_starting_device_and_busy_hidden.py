"""#22 item 14: "Defaults hide the incident": the busy device was among the hidden loop
devices, and the first device was selected by name, not by activity.

The ruling "The starting device": with DEV... the first one named; otherwise, when the first
frame with rates arrives, the shown device with the most r/s + w/s (ties by name), unless the
user has already moved the cursor. A hidden device is "busy" at >= 50 IOPS and >= the busiest
shown one: "9 hidden, loop2 busy (a: show all)"; at 80 columns "9 hidden (a)".
"""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.app import App, ComposeResult

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.app import IotopPlusApp, make_app
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.header import HostHeader
from tests.tui.canned import FIXTURES, HOST_ROOTS, CannedSampler, canned_app
from tests.tui.helpers import started, table, table_lines

LOOP0_BUSY = "   7       0 loop0 9000 0 72000 900 0 0 0 0 0 900 900 0 0 0 0 0 0\n"
"""loop0 (hidden by default) reads 9,000 times in the canned second: more than nvme0n1, the
busiest shown device (5,200 r/s + 2,100 w/s)."""


def host_copy(tmp_path: Path, *, loop0: str | None = None, idle: bool = False) -> Roots:
    """The canned host, copied; loop0's next counters replaced, or every device idle."""
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "tui_host", root, symlinks=True)
    proc = root / "proc"
    if idle:
        shutil.copyfile(proc / "diskstats", proc / "diskstats.next")
    if loop0 is not None:
        lines = (proc / "diskstats.next").read_text().splitlines(keepends=True)
        lines = [loop0 if line.split()[2] == "loop0" else line for line in lines]
        (proc / "diskstats.next").write_text("".join(lines))
    return Roots(proc=proc, sys=root / "sys")


def app_on(roots: Roots) -> IotopPlusApp:
    sampler = CannedSampler(roots)
    return make_app(roots, Config(interval=10.0), sampler=sampler, host=sampler.host_info())


def header(app: IotopPlusApp) -> str:
    return app.main_screen.query_one(HostHeader).text


async def test_the_busiest_shown_device_starts_selected_not_the_first_by_name() -> None:
    app = canned_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert t.visible_names()[0] == "dm-0"  # first by name
        assert t.selected == "nvme0n1"  # 5,200 r/s + 2,100 w/s: the busiest
        assert app.main_screen.selected_device == "nvme0n1"
        assert t.rows[t.cursor].name == "nvme0n1"


async def test_idle_devices_tie_and_the_first_by_name_starts_selected(tmp_path: Path) -> None:
    app = app_on(host_copy(tmp_path, idle=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert t.selected == t.visible_names()[0]


class TableAlone(App[None]):
    """The device table alone, fed frames by the test."""

    def compose(self) -> ComposeResult:
        yield DeviceTable(id="table")


def feed(t: DeviceTable, frame: Frame) -> None:
    t.update_devices(frame.rates, frame.inventory, frame.ever_used, frame.nr_requests, True)


async def test_a_cursor_moved_before_the_first_rates_stays_where_the_user_put_it() -> None:
    source = LiveSource(HOST_ROOTS, CannedSampler())
    first, second = source.next_frame(), source.next_frame()
    assert all(r is None for r in first.rates.values())  # a first frame: no rates yet
    app = TableAlone()
    async with app.run_test(size=(120, 20)) as pilot:
        t = app.query_one(DeviceTable)
        feed(t, first)
        await pilot.pause()
        assert t.selected == "dm-0"  # the first row, until rates say which is busiest
        await pilot.press("end")
        assert t.selected == "sdb"
        feed(t, second)
        await pilot.pause()
        assert t.selected == "sdb"  # the user's choice stands
    app = TableAlone()
    async with app.run_test(size=(120, 20)) as pilot:
        t = app.query_one(DeviceTable)
        feed(t, first)
        feed(t, second)  # untouched: the busiest is chosen at the first rates
        await pilot.pause()
        assert t.selected == "nvme0n1"


async def test_the_first_named_device_starts_selected_whatever_is_busiest() -> None:
    app = canned_app(devices=("sdb", "nvme0n1"))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        assert table(app).selected == "sdb"


async def test_a_busy_hidden_device_is_named_under_the_table_and_in_the_header(
    tmp_path: Path,
) -> None:
    app = app_on(host_copy(tmp_path, loop0=LOOP0_BUSY))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert "loop0" not in t.visible_names()
        assert t.selected == "nvme0n1"  # the busiest *shown* one
        note = f"{t.hidden} hidden, loop0 busy (a: show all)"
        assert any(note in line for line in table_lines(app)), table_lines(app)
        assert note in header(app)
        await pilot.press("a")  # shown now: nothing hidden, nothing to say
        await pilot.pause()
        assert not any("busy" in line for line in table_lines(app))
        assert "busy" not in header(app) and "hidden" not in header(app)


async def test_at_80_columns_the_header_says_hidden_a(tmp_path: Path) -> None:
    app = app_on(host_copy(tmp_path, loop0=LOOP0_BUSY))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert f"{t.hidden} hidden (a)" in header(app)
        head = app.main_screen.query_one(HostHeader)
        assert len(header(app)) <= head.size.width, (header(app), head.size.width)


async def test_a_quiet_hidden_device_is_not_called_busy() -> None:
    app = canned_app()  # loop0 idle, partitions busy (their I/O is their disk's)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert t.busy_hidden is None
        assert any(f"{t.hidden} hidden (a: show all)" in line for line in table_lines(app))
        assert "hidden" not in header(app)
