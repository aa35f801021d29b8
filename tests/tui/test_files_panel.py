"""The Files tab's text: the selected device's files per second, other, and the dirtiers."""

from __future__ import annotations

from iotop_plus.sampling.files.model import (
    DeviceFiles,
    Dirtier,
    FileEntry,
    FileProcess,
    FilesFrame,
)
from iotop_plus.tui.widgets.files_panel import files_text

FILE = FileEntry(
    "/data/db\x1b[2J.log",
    12,
    "sda1",
    read_bytes=2 * 1024 * 1024,
    write_bytes=1024 * 1024,
    processes=(FileProcess(7, "postgres", read_bytes=2 * 1024 * 1024),),
)


def test_lines_per_second_with_partition_processes_other_and_dirtiers() -> None:
    value = FilesFrame(
        {
            "sda": DeviceFiles(
                (FILE,),
                other_read_bytes=0,
                other_write_bytes=2 * 1024 * 1024,
                dirtiers=(Dirtier(9, "dd", "dd of=x", "/user.slice", 1024 * 1024, 1.0),),
            )
        },
        interval_s=2.0,
    )
    text = files_text(value, "sda", recorded=False)
    lines = text.splitlines()
    assert lines[0].split() == ["read", "written", "direct", "file", "(partition)", "processes"]
    assert "1.0M/s" in lines[1] and "512K/s" in lines[1]
    assert "(sda1)" in lines[1] and "postgres[7]" in lines[1]
    assert "\x1b" not in text and "\\x1b[2J" in lines[1]  # names never reach the terminal raw
    assert "other (metadata, journal" in lines[2] and "1.0M/s" in lines[2]
    assert lines[3] == "written back for: dd[9] 100 %"


def test_says_why_when_there_is_nothing_to_show() -> None:
    assert files_text(None, "sda", recorded=True) == "files: not recorded"
    assert files_text(None, None, recorded=False) == "files: select a device"
    note = FilesFrame(estimated=True, note="files: estimated from your own processes")
    assert files_text(note, "sda", recorded=False).splitlines() == [
        "files: estimated from your own processes",
        "no file I/O on sda in this frame",
    ]


async def test_capital_f_opens_the_files_tab_from_anywhere() -> None:
    from iotop_plus.config import Config
    from iotop_plus.roots import Roots
    from iotop_plus.tui.app import make_app
    from iotop_plus.tui.widgets.files_panel import FilesPanel
    from iotop_plus.tui.widgets.side_panel import SidePanel
    from tests.tui.canned import FIXTURES, CannedSampler
    from tests.tui.helpers import started, wait_for

    roots = Roots(FIXTURES / "tui_host" / "proc", FIXTURES / "tui_host" / "sys")
    sampler = CannedSampler(roots)
    app = make_app(roots, Config(interval=10.0), sampler=sampler, host=sampler.host_info())
    async with app.run_test(size=(140, 40)) as pilot:
        await started(pilot, app)
        await pilot.press("F")
        await wait_for(pilot, lambda: bool(app.main_screen.query(FilesPanel)))
        side = app.main_screen.query_one("#side-panel", SidePanel)
        assert side.active == "tab-files"
        panel = app.main_screen.query_one(FilesPanel)
        await wait_for(pilot, lambda: str(panel.render()).startswith("files:"))
        await pilot.press("I")  # another tab: the files are no longer asked for
        await wait_for(pilot, lambda: side.active == "tab-device")
        assert not panel.sampling
