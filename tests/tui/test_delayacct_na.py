"""`D` on the real ``kernel.task_delayacct`` (#22 item 4): the switch goes through the tuner
(journaled as a host setting), and a process started before the switch reads IO% "n/a", not
0.0: the kernel gives a delay record only to tasks forked while delay accounting is on.

Two real writers (pwrite + fsync on ext4, so they wait on block I/O), one started before the
switch and one after, in the Processes panel of a small host App against the real /proc. The
sysctl's value is put back afterwards, whatever happens.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import ComposeResult

from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.tui.widgets.process_panel import ProcessPanel
from tests.support.frames import step_awaiting
from tests.tui.test_process_panel import WRITER, FeedApp, wait_for

pytestmark = pytest.mark.root


class Host(FeedApp):
    def __init__(self, tuner: Tuner) -> None:
        super().__init__()
        self.panel = ProcessPanel(Roots(), self, id="processes", tuner=tuner)

    def compose(self) -> ComposeResult:
        yield self.panel

    def on_mount(self) -> None:
        self.panel.process_list.focus()


def writer(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path)])


def io_cell(panel: ProcessPanel, pid: int) -> str | None:
    """The IO% cell of ``pid``'s row as the list draws it, or None without a row."""
    plist = panel.process_list
    row = next((r for r in plist.rows if r.pid == pid), None)
    if row is None:
        return None
    # PID USER READ WRITE RCHAR WCHAR IO% ...: all shown at 110 columns.
    return plist.row_text(row, 110).split()[6]


def figure(cell: str | None) -> float | None:
    try:
        return float(cell) if cell is not None else None
    except ValueError:
        return None


async def test_a_process_started_before_D_reads_n_a_and_a_later_one_a_figure(
    delayacct_off: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    tuner = Tuner(Roots(), Journal.in_dir(state))
    before = writer(tmp_path / "iotop-plus-before.dat")
    after: subprocess.Popen[bytes] | None = None
    try:
        app = Host(tuner)
        async with app.run_test(size=(110, 30)) as pilot:
            panel = app.panel
            await step_awaiting(
                pilot, app.clock, lambda: io_cell(panel, before.pid) == "off", "IO% off"
            )
            await pilot.press("D")
            await wait_for(pilot, lambda: delayacct_off.read_text().strip() == "1", "the switch")
            after = writer(tmp_path / "iotop-plus-after.dat")
            await step_awaiting(
                pilot,
                app.clock,
                lambda: (
                    io_cell(panel, before.pid) == "n/a"
                    and (figure(io_cell(panel, after.pid)) or 0.0) > 0.0
                ),
                "n/a for the older writer, a measured IO% for the newer one",
                timeout=15,
            )
            assert "IO% n/a: started before delay accounting was switched on" in (
                panel.status_text()
            )
    finally:
        for proc in (before, after):
            if proc is not None:
                proc.kill()
                proc.wait(timeout=10)
    tuner.keep("quit")
    tuner.journal.close()
    lines = [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]
    assert [x["record"] for x in lines] == ["intent", "change", "keep"]
    assert lines[1]["scope"] == "host" and lines[1]["device"] is None
    assert (lines[1]["old"], lines[1]["effective"]) == ("0", "1")
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert lines[0]["boot_id"] == lines[1]["boot_id"] == boot_id
