"""The Processes tab: which processes do the I/O (the iotop view), self-contained.

The panel never reads /proc: while it is shown it asks its :class:`ProcessFeed` (the main
screen's, passed in) for processes, and the frames then carry them
(:meth:`ProcessPanel.show_processes`).
Rows for thousands of processes are arranged in a worker thread; the list is a Line-API
widget that formats only the rows on screen, so a tick costs a sort, not a repaint.

Keys (active while the panel has focus; none clashes with the main screen's
``q ? space + - / a c < > r 1 2 3``):

* ``o`` only processes doing I/O now (``iotop -o``); ``t`` totals since start (``iotop -a``)
* ``left``/``right`` sort column (as in iotop), ``i`` invert the order
* ``f`` filter by command, user or cgroup (``/`` stays the device filter), ``escape`` closes it
* ``enter`` threads and open files on block devices of the selected process
* ``D`` switch delay accounting (root; capital, as it changes a kernel setting). It is a host
  setting: the write goes through the tuner in a worker, journaled (scope ``host``), undone by
  ``u``/``U``, offered on quit and by ``restore``. Processes started before the last switch to
  on read IO% ``n/a``: the kernel keeps no delays for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Input, Static

from iotop_plus.devices.delayacct import can_switch
from iotop_plus.devices.settings import SettingError
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.disk_writes import DiskWrites, disk_writes
from iotop_plus.sampling.frame.model import ProcessFrame
from iotop_plus.sampling.processes.delayacct import NOTE, DelayAcct, read_delayacct
from iotop_plus.sampling.processes.issuers import Issuer
from iotop_plus.sampling.processes.rates import (
    ProcessSample,
    TaskCounters,
    TaskKey,
    TaskRates,
    TaskTotals,
    started_before_delayacct,
    switch_ticks,
)
from iotop_plus.sampling.topology.blockdev import OpenBlockFile
from iotop_plus.text import compact_bytes, printable
from iotop_plus.tui.keys import PROCESSES, panel_bindings
from iotop_plus.tui.process_rows import (
    COLUMNS,
    DEVICE_COLUMNS,
    SORT_KEYS,
    Column,
    ProcessRow,
    View,
    build_rows,
    device_cells,
    pct,
    printable_lines,
)
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.cursor_list import SortedList
from iotop_plus.tui.widgets.device_only import DeviceOnly
from iotop_plus.tui.widgets.list_panel import ListPanel


class ProcessFeed(Protocol):
    """What gives the panel its processes: the main screen's frame feed (the one clock)."""

    def want_processes(self, on: bool) -> None:
        """Frames carry processes from now on (or no longer)."""
        ...

    def set_detail_pid(self, pid: int | None) -> None:
        """Frames carry threads and open files of ``pid`` (read soon, not next tick)."""
        ...


class ProcessList(SortedList[ProcessRow]):
    """The virtualised process list: a header line, then one line per process."""

    COMPONENT_CLASSES = {"process-list--header", "process-list--cursor"}
    HEADER_COMPONENT = "process-list--header"
    CURSOR_COMPONENT = "process-list--cursor"
    DEFAULT_CSS = """
    ProcessList { height: 1fr; }
    ProcessList > .process-list--cursor { background: $accent 40%; }
    """

    def __init__(
        self, *, sort: Callable[[int], object] | None = None, id: str | None = None
    ) -> None:
        super().__init__(sort=sort, id=id)
        self.totals_mode = False
        self.io_off = False
        self.device_mode = False

    def row_key(self, row: ProcessRow) -> TaskKey:
        return row.key

    def row_text(self, row: ProcessRow, width: int) -> str:
        return self._line(self._cells(row), width)

    def _columns(self, width: int) -> list[Column]:
        # Drop the least important columns until the fixed ones leave COMMAND_ROOM.
        cols = [*COLUMNS[:-1], *(DEVICE_COLUMNS if self.device_mode else ()), COLUMNS[-1]]
        for priority in (5, 3, 4, 2, *((1,) if self.device_mode else ())):  # RCHAR... IO%
            if sum(c.width + 1 for c in cols) + COMMAND_ROOM <= width:
                break
            cols = [c for c in cols if c.priority != priority]
        return cols

    def _cells(self, row: ProcessRow) -> dict[str, str]:
        if self.totals_mode:
            io = "-" if row.io is None else f"{row.io:.1f}s"
        else:
            io = "-" if row.io is None else f"{row.io:.1f}"
        if row.io_unmeasured:
            io = "n/a"
        if self.io_off:
            io = "off"
        return {
            "pid": str(row.pid),
            "user": printable(row.user),
            "read": compact_bytes(row.read),
            "write": compact_bytes(row.write),
            "rchar": compact_bytes(row.rchar),
            "wchar": compact_bytes(row.wchar),
            "io": io,
            "cgroup": printable(row.cgroup) or "-",
            "command": printable(row.command),
            **device_cells(row),
        }

    def _line(self, cells: dict[str, str], width: int) -> str:
        parts = []
        for col in self._columns(width):
            text = cells[col.key]
            if col.width == 0:
                parts.append(text)
            elif col.right:
                parts.append(text[: col.width].rjust(col.width))
            else:
                parts.append(text[: col.width].ljust(col.width))
        return " ".join(parts)

    def header_text(self, width: int) -> str:
        """The header line with an arrow on the sorted column(s)."""
        titles = {}
        for col in (*COLUMNS, *DEVICE_COLUMNS):
            title = "WAIT" if self.totals_mode and col.key == "io" else col.title
            titles[col.key] = self.sort_title(col.key, title)
        return self._line(titles, width)


NOT_RECORDED = "Processes: not recorded at this time (the history keeps them only while the \
Processes tab is shown; a recorder keeps them unless --processes 0)"
"""The status of a history or replay frame that carries no processes."""


COMMAND_ROOM = 24
"""The columns kept leave the command at least this many cells (a command line says more
than a cgroup or a user does)."""


class ProcessPanel(DeviceOnly, ListPanel):
    """The iotop view: per-process I/O with sorting, filter, totals and details.

    Args:
        roots: Where /proc and /sys are.
        interval: Seconds between samples (0.25 to 10).
    """

    DEFAULT_CSS = """
    ProcessPanel { height: 1fr; }
    ProcessPanel > #process-filter { display: none; }
    ProcessPanel > #process-filter.shown { display: block; }
    ProcessPanel > #process-detail { display: none; height: auto; }
    ProcessPanel > #process-detail.shown { display: block; }
    """
    BINDINGS = panel_bindings(PROCESSES)
    FILTER_ID = "process-filter"
    DETAIL_ID = "process-detail"
    SORT_KEYS = SORT_KEYS
    ASCENDING_KEYS = frozenset({"user", "command", "pid", "cgroup"})
    """Names sort A-Z first; figures biggest first."""

    @dataclass
    class SampleReady(Message):
        """A frame's processes with their rows arranged for ``view`` (frozen data only)."""

        processes: ProcessFrame
        """The frame's processes: counters, rates, totals, details."""
        rows: list[ProcessRow]
        """Rows already arranged for ``view`` by the worker (not to be mutated)."""
        view: View
        """The sort, filter and modes the rows were arranged for."""
        delay_since: int | None = None
        """Clock ticks since boot of the last switch of delay accounting to on (None:
        unknown): tasks started before it read IO% n/a."""

        @property
        def sample(self) -> ProcessSample:
            """The raw per-task counters."""
            return self.processes.sample

        @property
        def rates(self) -> Mapping[TaskKey, TaskRates | None]:
            """Per-task rates over the interval."""
            return self.processes.rates

        @property
        def totals(self) -> Mapping[TaskKey, TaskTotals]:
            """Bytes per task since processes were first shown."""
            return self.processes.totals

        @property
        def detail_rates(self) -> Mapping[TaskKey, TaskRates | None]:
            """Per-thread rates of the detailed process."""
            return self.processes.detail_rates

        @property
        def open_files(self) -> tuple[OpenBlockFile, ...]:
            """Block-device files the detailed process holds open."""
            return self.processes.open_files

        def can_replace(self, message: Message) -> bool:
            # A late sample is worth nothing once a newer one is queued.
            return isinstance(message, ProcessPanel.SampleReady)

    def __init__(
        self,
        roots: Roots | None = None,
        feed: ProcessFeed | None = None,
        *,
        id: str | None = None,
        classes: str | None = None,
        refuse: Callable[[str], bool] | None = None,
        tuner: Tuner | None = None,
    ) -> None:
        """Args:
        roots: Where /proc is (for the delay-accounting switch).
        feed: What supplies frames with processes (the app); None shows nothing.
        refuse: Asked before a change to the system (``"tab-processes:toggle_delayacct"``);
            True when refused (``--read-only``), having said why.
        tuner: Switches delay accounting, journaled and undoable (the app's; default: one
            with an in-memory journal, for tests).
        """
        super().__init__(feed, id=id, classes=classes)
        self.roots = roots or Roots()
        self.feed: ProcessFeed | None = feed
        self.refuse = refuse
        self.tuner = tuner if tuner is not None else Tuner(self.roots, None)
        """Writes ``kernel.task_delayacct`` (journaled) and knows when it was switched on."""
        self.totals_mode = False
        self.detail_pid: int | None = None
        self.last: ProcessPanel.SampleReady | None = None
        self.disk_writes: DiskWrites | None = None
        """The disks' actual writes over the interval of the processes shown."""
        """The latest arranged sample (for tests and the status line)."""
        self.not_recorded = False
        """The frame shown (history, replay) carries no processes."""
        self.error: str | None = None
        self._view_snapshot = View()

    def compose(self) -> ComposeResult:
        yield Static(
            "Processes: waiting for the first sample...", id="process-status", markup=False
        )
        yield Input(
            placeholder="filter by command, user or cgroup (Esc clears)", id="process-filter"
        )
        yield ProcessList(sort=self.action_sort, id="process-list")
        yield Static("", id="process-detail", markup=False)

    @property
    def process_list(self) -> ProcessList:
        """The list widget."""
        return self.query_one(ProcessList)

    # -- the base panel's hooks ----------------------------------------------------------------

    @property
    def sorted_list(self) -> ProcessList:
        return self.process_list

    @property
    def detail_key(self) -> int | None:
        return self.detail_pid

    def row_detail_key(self, row: ProcessRow) -> int:
        return row.key[0]

    def feed_wants(self, on: bool) -> None:
        if self.feed is not None:
            self.feed.want_processes(on)

    def feed_detail(self, key: int | None) -> None:
        if self.feed is not None:
            self.feed.set_detail_pid(key)  # read the threads now, not at the next tick

    def set_detail(self, key: int | None) -> None:
        self.detail_pid = key
        self.feed_detail(key)

    def render_detail(self) -> None:
        self._render_detail()

    def rerender(self) -> None:
        self._rerender()

    def close_rest(self) -> None:
        self.set_detail(None)
        self.query_one(f"#{self.DETAIL_ID}", Static).remove_class("shown")

    # -- frames from the feed ----------------------------------------------------------------

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its processes (while the tab is shown); in history or
        a replay, "not recorded" where the frame has none."""
        frame = shown.frame
        self.shown = shown
        if not self.sampling or frame is None:
            return
        if shown.recorded and frame.processes is None:
            self.show_not_recorded()
        else:
            self.show_processes(frame.processes, frame.process_error, disk_writes(frame))

    def show_processes(
        self,
        processes: ProcessFrame | None,
        error: str | None = None,
        disks: DiskWrites | None = None,
    ) -> None:
        """A frame's processes arrived (or could not be read: ``error``), with the disks'
        actual writes over the same interval."""
        self.disk_writes = disks
        if processes is None:
            if error is not None:
                self.error = error
                self._render_status()
            return
        self._arrange(processes, self._view_snapshot, self.device_issuers())

    def show_not_recorded(self) -> None:
        """A frame of the history or a replay without processes: say so, show no rows (never
        the live ones from before)."""
        self.workers.cancel_group(self, "process-rows")
        self.last = None
        self.error = None
        self.not_recorded = True
        self.process_list.set_rows([])
        self._render_status()

    @work(thread=True, exclusive=True, group="process-rows", exit_on_error=False)
    def _arrange(self, processes: ProcessFrame, view: View, who: tuple[Issuer, ...]) -> None:
        # Sorting and filtering 5,000 rows takes ~40 ms: off the UI thread. The switch time
        # is read from the journal once (then cached by the tuner), also off the UI thread.
        since = switch_ticks(self.tuner.delayacct_switched_on())
        rows = build_rows(processes.rates, processes.totals, view, processes.cgroups, since, who)
        self.post_message(self.SampleReady(processes, rows, view, since))

    @dataclass
    class ShownChanged(Message):
        """The tab came on screen or left it: the side panel takes half the screen below 150
        columns while it shows, so the command line has room (``processes-shown`` in
        app.tcss)."""

        shown: bool
        """Whether the tab is on screen now."""

    def on_show(self) -> None:
        self.post_message(self.ShownChanged(True))

    def on_hide(self) -> None:
        self.post_message(self.ShownChanged(False))

    def on_process_panel_sample_ready(self, message: SampleReady) -> None:
        message.stop()
        self.last = message
        self.error = None
        self.not_recorded = False
        self._render_rows()
        self._render_status()
        self._render_detail()

    @property
    def view(self) -> View:
        """The current sort, filter and modes (read by the worker thread too)."""
        plist = self.process_list
        return View(
            plist.sort,
            plist.descending,
            self.only_active,
            self.totals_mode,
            self.filter_text,
            self.device_filter,
        )

    def _render_rows(self) -> None:
        msg = self.last
        if msg is None:
            return
        view = self.view
        plist = self.process_list
        plist.totals_mode = self.totals_mode
        plist.io_off = msg.sample.delayacct is DelayAcct.OFF
        if msg.rows is not None and msg.view == view:
            plist.set_rows(msg.rows)
        else:
            # A key changed the view since the worker arranged the rows: redo them now.
            plist.set_rows(
                build_rows(
                    msg.rates,
                    msg.totals,
                    view,
                    msg.processes.cgroups,
                    msg.delay_since,
                    self.device_issuers(),
                )
            )

    def status_text(self) -> str:
        """The status line: counts, modes, delay accounting and visibility notes."""
        msg = self.last
        if msg is None:
            if self.error:
                return f"Processes: sampling error: {self.error}"
            if self.not_recorded:
                return NOT_RECORDED
            return "Processes: waiting for the first sample..."
        sample = msg.sample
        shown = len(self.process_list.rows)
        parts = [f"{shown} of {len(sample.tasks)} processes"]
        if msg.rates:
            read = sum(r.read_bps or 0.0 for r in msg.rates.values() if r is not None)
            write = sum(r.write_bps or 0.0 for r in msg.rates.values() if r is not None)
            totals = f"DISK READ {compact_bytes(read)}/s WRITE {compact_bytes(write)}/s"
            disks = self.disk_writes
            if disks is not None:  # iotop's "Actual DISK WRITE": what reached the disks
                actual = compact_bytes(disks.write_bps)
                totals += f" · actual WRITE {actual}/s on {printable(disks.names())}"
            parts.insert(0, totals)
        else:
            parts.append("rates from the next sample")
        if self.only_active:
            parts.append("only doing I/O")
        if self.totals_mode:
            parts.append("totals since start")
        if self.filter_text:
            parts.append(f"filter {self.filter_text!r}")
        parts.append(f"{sample.duration_s * 1000:.0f} ms/sample")
        lines = [" · ".join(parts), *filter(None, [self.device_status()])]
        if sample.delayacct is DelayAcct.OFF:
            how = (
                "press D to turn it on (a small cost per task switch; off again at reboot)"
                if can_switch(self.roots) is None
                else "root can turn it on: sysctl -w kernel.task_delayacct=1"
            )
            lines.append(f"IO% off: delay accounting is off (kernel.task_delayacct=0); {how}")
        elif any(row.io_unmeasured for row in self.process_list.rows):
            lines.append(
                "IO% n/a: started before delay accounting was switched on "
                "(the kernel keeps no delays for them)"
            )
        message = sample.unreadable_message
        if message:
            lines.append(message)
        if sample.problems:
            more = f" (+{len(sample.problems) - 1} more)" if len(sample.problems) > 1 else ""
            lines.append(f"skipped: {sample.problems[0]}{more}")
        if self.error:
            lines.append(f"sampling error: {self.error}")
        return "\n".join(lines)

    def _render_status(self) -> None:
        self.query_one("#process-status", Static).update(printable_lines(self.status_text()))

    def detail_text(self) -> str:
        """Threads and open files on block devices of the process being detailed."""
        msg = self.last
        pid = self.detail_pid
        if pid is None:
            return ""
        if msg is None or msg.sample.detail_pid != pid:
            return f"PID {pid}: reading threads and open files..."

        def busiest(task: TaskCounters) -> tuple[float, int]:
            rates = msg.detail_rates.get(task.key)
            return (-(rates.disk_bps if rates else 0.0), task.tid)

        threads = sorted(msg.sample.detail.values(), key=busiest)
        head = threads[0].name if threads else "(exited)"
        lines = [f"PID {pid}  {head}", f"{'TID':>7} {'READ':>7} {'WRITE':>7} {'IO%':>6} NAME"]
        for t in threads[:12]:
            r = msg.detail_rates.get(t.key)
            if msg.sample.delayacct is DelayAcct.OFF:
                io = "off"
            elif started_before_delayacct(t, msg.delay_since):
                io = "n/a"
            else:
                io = pct(r)
            lines.append(
                f"{t.tid:>7} {compact_bytes(r.read_bps if r else None):>7} "
                f"{compact_bytes(r.write_bps if r else None):>7} {io:>6} {t.comm}"
            )
        if len(threads) > 12:
            lines.append(f"... and {len(threads) - 12} more threads")
        files = msg.open_files
        if files:
            lines.append(
                "Open files on block devices (~ through its filesystem, "
                "? best guess from the mount source):"
            )
            for f in files[:12]:
                mark = {"device": " ", "filesystem": "~"}.get(f.how, "?")
                lines.append(f"{f.fd:>5} {mark}{f.device:<10} {f.path}")
            if len(files) > 12:
                lines.append(f"... and {len(files) - 12} more")
        elif os.geteuid() != 0:
            lines.append("No open files on block devices seen (others' fds need root).")
        else:
            lines.append("No open files on block devices.")
        return "\n".join(lines)

    def _render_detail(self) -> None:
        self.query_one("#process-detail", Static).update(printable_lines(self.detail_text()))

    # -- actions -----------------------------------------------------------------------------

    def action_toggle_totals(self) -> None:
        """Switch between rates and totals since the panel started sampling."""
        self.totals_mode = not self.totals_mode
        self._rerender()

    def action_details(self) -> None:
        """Show threads and open files of the selected process (again: hide them)."""
        self.toggle_detail()

    def action_toggle_delayacct(self) -> None:
        """Turn delay accounting on (or off) as root; explain why not otherwise."""
        if self.refuse is not None and self.refuse("tab-processes:toggle_delayacct"):
            return
        self._switch_delayacct(read_delayacct(self.roots) is not DelayAcct.ON)

    @work(thread=True, group="tuning", exit_on_error=False)
    def _switch_delayacct(self, turn_on: bool) -> None:
        # A host setting: journaled first (no journal, no change), written, read back.
        try:
            change = self.tuner.switch_delayacct(turn_on)
        except SettingError as exc:
            self.app.call_from_thread(
                self.notify,
                f"Cannot switch delay accounting: {exc.message}",
                severity="error" if exc.kind == "failed" else "warning",
                markup=False,
            )
            return
        self.app.call_from_thread(self._switched, change.effective == "1")

    def _switched(self, on: bool) -> None:
        if on:
            self.notify(
                "Delay accounting on (u undoes it): IO% from the next interval; processes "
                f"started before now read n/a. {NOTE}",
                markup=False,
            )
        else:
            self.notify("Delay accounting off (u undoes it): IO% is no longer measured.")
        if self.tuner.journal.problem:
            self.notify(self.tuner.journal.problem, severity="warning", markup=False)

    def _rerender(self) -> None:
        self._view_snapshot = self.view
        self._render_rows()
        self._render_status()
