"""The Cgroups tab: which service, container or pod does the I/O, as a tree with roll-up.

Like the Processes tab, the panel never reads /sys: while it is shown it asks its
:class:`CgroupFeed` (the main screen's, passed in) for cgroups, and the frames then carry them
(:meth:`CgroupPanel.show_cgroups`).

Keys (active while the panel has focus; none clashes with the main screen's):

* ``left``/``right`` sort column, ``i`` invert the order; ``o`` only cgroups doing I/O
* ``f`` filter by path or name (``/`` stays the device filter), ``escape`` closes it
* ``enter`` the processes in the selected cgroup (again: hide them)

Under the list, the selected cgroup's I/O per device (its split: which disks it reads and
writes). In history and replay the panel shows the frame's cgroups (those that did I/O, as the
history and recordings keep them), or says they were not recorded: never the live ones.
"""

from __future__ import annotations

from typing import Protocol

from textual.app import ComposeResult
from textual.widgets import Input, Static

from iotop_plus.sampling.cgroups.files import not_counted_line
from iotop_plus.sampling.cgroups.limits import V1_WRITEBACK_NOTE, device_limits
from iotop_plus.sampling.frame.model import CgroupFrame
from iotop_plus.sampling.processes.issuers import IssuersFrame
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.text import compact_bytes, printable
from iotop_plus.tui.cgroup_rows import (
    CGROUP_COLUMNS,
    CGROUP_SORT_KEYS,
    CgroupColumn,
    CgroupRow,
    CgroupView,
    build_cgroup_rows,
    device_split_text,
    members_text,
)
from iotop_plus.tui.keys import CGROUPS, panel_bindings
from iotop_plus.tui.process_rows import printable_lines
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.cursor_list import SortedList
from iotop_plus.tui.widgets.list_panel import ListPanel

NOT_RECORDED = (
    "Cgroups: not recorded at this time (the history keeps them only while the Cgroups tab "
    "is shown; a recorder of version 4 keeps them unless --no-cgroups)"
)
"""The status of a history or replay frame that carries no cgroups."""


class CgroupFeed(Protocol):
    """What gives the panel its cgroups: the main screen's frame feed (the one clock)."""

    def want_cgroups(self, on: bool) -> None:
        """Frames carry cgroups from now on (or no longer)."""
        ...

    def set_detail_cgroup(self, path: str | None) -> None:
        """Frames list the processes of cgroup ``path``."""
        ...


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _iops(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


class CgroupList(SortedList[CgroupRow]):
    """The virtualised cgroup tree: a header line, then one line per cgroup."""

    COMPONENT_CLASSES = {"cgroup-list--header", "cgroup-list--cursor"}
    HEADER_COMPONENT = "cgroup-list--header"
    CURSOR_COMPONENT = "cgroup-list--cursor"
    DEFAULT_CSS = """
    CgroupList { height: 1fr; }
    CgroupList > .cgroup-list--cursor { background: $accent 40%; }
    """

    def row_key(self, row: CgroupRow) -> str:
        return row.path

    def row_text(self, row: CgroupRow, width: int) -> str:
        return self.line(self._cells(row), width)

    def columns(self, width: int) -> list[CgroupColumn]:
        """The columns that fit ``width``, leaving the name at least 16 characters."""
        cols = list(CGROUP_COLUMNS)
        for priority in (6, 5, 4, 3, 2):
            if sum(c.width + 1 for c in cols) + 16 <= width:
                break
            cols = [c for c in cols if c.priority != priority]
        return cols

    def _cells(self, row: CgroupRow) -> dict[str, str]:
        return {
            "name": "  " * min(row.depth, 8) + printable(row.name),
            "read": compact_bytes(row.read),
            "write": compact_bytes(row.write),
            "rios": _iops(row.rios),
            "wios": _iops(row.wios),
            "discard": compact_bytes(row.discard),
            "some": _pct(row.some),
            "full": _pct(row.full),
            "limits": printable(row.limits),
        }

    def line(self, cells: dict[str, str], width: int) -> str:
        """One line: the name takes what the figures leave."""
        cols = self.columns(width)
        fixed = sum(c.width + 1 for c in cols if c.width)
        parts = []
        for col in cols:
            text = cells[col.key]
            if col.width == 0:
                room = max(width - fixed, 8)
                parts.append(text[:room].ljust(room))
            elif col.key == "limits":
                parts.append(text[: col.width].ljust(col.width))
            else:
                parts.append(text[: col.width].rjust(col.width))
        return " ".join(parts)[:width]

    def header_text(self, width: int) -> str:
        """Column titles with an arrow on the sorted one(s)."""
        return self.line({c.key: self.sort_title(c.key, c.title) for c in CGROUP_COLUMNS}, width)


class CgroupPanel(ListPanel):
    """Per-cgroup I/O and pressure as a tree, with sort, filter and the selected one's processes."""

    DEFAULT_CSS = """
    CgroupPanel { height: 1fr; }
    CgroupPanel > #cgroup-filter { display: none; }
    CgroupPanel > #cgroup-filter.shown { display: block; }
    CgroupPanel > #cgroup-devices { height: auto; max-height: 6; }
    CgroupPanel > #cgroup-members { display: none; height: auto; }
    CgroupPanel > #cgroup-members.shown { display: block; }
    """
    BINDINGS = panel_bindings(CGROUPS)
    FILTER_ID = "cgroup-filter"
    DETAIL_ID = "cgroup-members"
    SORT_KEYS = CGROUP_SORT_KEYS
    ASCENDING_KEYS = frozenset({"name"})

    def __init__(self, feed: CgroupFeed | None = None, *, id: str | None = None) -> None:
        """Args:
        feed: What supplies frames with cgroups (the app); None shows nothing.
        """
        super().__init__(feed, id=id)
        self.feed: CgroupFeed | None = feed
        self.detail: str | None = None
        """The cgroup whose processes are listed."""
        self.last: CgroupFrame | None = None
        """The latest frame's cgroups."""
        self.recorded = False
        """The frame shown is one of the history or a replay (not this host now)."""
        self.issuers: IssuersFrame | None = None
        """The frame's issuers: the per-device split shows their traced latency."""

    def compose(self) -> ComposeResult:
        yield Static("Cgroups: waiting for the first sample...", id="cgroup-status", markup=False)
        yield Input(placeholder="filter by cgroup path or name (Esc clears)", id="cgroup-filter")
        yield CgroupList(sort=self.action_sort, moved=self.selection_moved, id="cgroup-list")
        yield Static("", id="cgroup-devices", markup=False)
        yield Static("", id="cgroup-members", markup=False)

    @property
    def cgroup_list(self) -> CgroupList:
        """The list widget."""
        return self.query_one(CgroupList)

    # -- the base panel's hooks ----------------------------------------------------------------

    @property
    def sorted_list(self) -> CgroupList:
        return self.cgroup_list

    @property
    def detail_key(self) -> str | None:
        return self.detail

    def row_detail_key(self, row: CgroupRow) -> str:
        return row.path

    def feed_wants(self, on: bool) -> None:
        if self.feed is not None:
            self.feed.want_cgroups(on)

    def feed_detail(self, key: str | None) -> None:
        if self.feed is not None:
            self.feed.set_detail_cgroup(key)

    def render_detail(self) -> None:
        self._render_members()

    def rerender(self) -> None:
        self._rerender()

    # -- frames from the feed ----------------------------------------------------------------

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its cgroups (while the tab is shown); in history or a
        replay, "not recorded" where the frame has none."""
        frame = shown.frame
        if self.sampling and frame is not None:
            issuers = frame.get(IssuersPart)
            self.show_cgroups(frame.cgroups, recorded=shown.recorded, issuers=issuers)

    def show_cgroups(
        self,
        cgroups: CgroupFrame | None,
        *,
        recorded: bool = False,
        issuers: IssuersFrame | None = None,
    ) -> None:
        """A frame's cgroups arrived; ``recorded``: a frame of the history or a replay, where
        None means they were not recorded (live, None means not read yet: keep waiting);
        ``issuers``: the same frame's (the split per device shows their traced latency)."""
        if cgroups is None and not recorded:
            return
        self.last = cgroups
        self.issuers = issuers
        self.recorded = recorded
        self._rerender()
        self._render_members()

    @property
    def view(self) -> CgroupView:
        """The current sort, filter and mode."""
        plist = self.cgroup_list
        return CgroupView(plist.sort, plist.descending, self.only_active, self.filter_text)

    def _rerender(self) -> None:
        rows = build_cgroup_rows(self.last, self.view) if self.last is not None else []
        if self.last is not None or self.recorded:
            self.cgroup_list.set_rows(rows)
        self.query_one("#cgroup-status", Static).update(printable_lines(self.status_text()))
        self._render_devices()

    def _render_devices(self) -> None:
        row = self.cgroup_list.current
        text = device_split_text(self.last, row.path, issuers=self.issuers) if row else ""
        self.query_one("#cgroup-devices", Static).update(printable_lines(text))

    def status_text(self) -> str:
        """Counts, the cgroup version and root, and what could not be read."""
        frame = self.last
        if frame is None and self.recorded:
            return NOT_RECORDED
        if frame is None:
            return "Cgroups: waiting for the first sample..."
        sample = frame.sample
        parts = [f"{len(self.cgroup_list.rows)} of {len(sample.cgroups)} cgroups"]
        if self.recorded:
            parts[0] += " recorded (those with I/O or limits)"
        if sample.version is not None:
            parts.append(f"cgroup {sample.version}")
        if all(r is None for r in frame.rates.values()):
            parts.append("rates from the next sample")
        if self.only_active:
            parts.append("only doing I/O")
        if self.filter_text:
            parts.append(f"filter {self.filter_text!r}")
        if not self.recorded:
            parts.append(f"{sample.duration_s * 1000:.0f} ms/sample")
        lines = [" · ".join(parts), "Figures include each cgroup's children."]
        if sample.notice:
            lines.append(sample.notice)
        if sample.version == "v1":  # v1 or hybrid: writeback is the root's
            lines.append(V1_WRITEBACK_NOTE)
        uncounted = not_counted_line(sample.not_counted, sample.device_names)
        if uncounted:
            lines.append(uncounted)
        throttled = [t for t in device_limits(sample, frame.rates) if t.throttled]
        lines += [f"throttled: {t.text()}" for t in throttled[:2]]
        if sample.problems:
            more = f" (+{len(sample.problems) - 1} more)" if len(sample.problems) > 1 else ""
            lines.append(f"skipped: {sample.problems[0]}{more}")
        return "\n".join(lines)

    def _render_members(self) -> None:
        text = members_text(self.last, self.detail, recorded=self.recorded)
        self.query_one("#cgroup-members", Static).update(printable_lines(text))

    def selection_moved(self) -> None:
        """The cursor moved: the processes follow it while they are shown."""
        row = self.cgroup_list.current
        self._render_devices()
        if self.detail is not None and row is not None and row.path != self.detail:
            self.set_detail(row.path)
            self._render_members()

    # -- actions -----------------------------------------------------------------------------

    def action_members(self) -> None:
        """List the processes of the selected cgroup (again: hide them)."""
        self.toggle_detail()

    def set_detail(self, key: str | None) -> None:
        self.detail = key
        self.feed_detail(key)
