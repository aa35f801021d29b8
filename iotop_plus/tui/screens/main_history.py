"""The main screen's history keys (``[ ] { } g l``), and what the "who" tabs show in history.

A mixin of :class:`~iotop_plus.tui.screens.main.MainScreen` that hands each key to the
screen's :class:`~iotop_plus.tui.scrub.Scrubber`, the collaborator that moves the position
and says what it cannot do, and gives each frame's processes and cgroups to the Processes and
Cgroups tabs: in history or a replay a part the frame does not carry is "not recorded", never
the live one kept from before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from iotop_plus.sampling.disks.disk_writes import disk_writes
from iotop_plus.sampling.processes.issuers_part import IssuersPart
from iotop_plus.tui.diff_view import Window, mark, show_diff, windows_before
from iotop_plus.tui.scrub import HISTORY, REPLAY, Scrubber

if TYPE_CHECKING:
    from iotop_plus.config import Config
    from iotop_plus.sampling.blocked.model import BlockedTasks
    from iotop_plus.sampling.frame.model import Frame
    from iotop_plus.tui.replay_reads import ReplayRead
    from iotop_plus.tui.screens.side_panels import SidePanels
    from iotop_plus.tui.widgets.blocked_panel import BlockedPanel
    from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel
    from iotop_plus.tui.widgets.files_panel import FilesPanel
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from iotop_plus.tui.widgets.sync_panel import SyncPanel


WHO_HISTORY_HELP = (
    "History and replay: the Processes and Cgroups tabs show what the frame on screen carries. "
    "The history keeps, while the tab is shown, the top processes with their cgroup and the "
    "cgroups doing I/O; a recording (format 4) keeps the top processes with their command "
    "lines and cgroup, and the cgroups doing I/O with their split per device. A frame without "
    "them says 'not recorded', never shows the live figures. Under the cgroups, the selected "
    "one's I/O per device (bytes and requests per second)."
)
"""The help's paragraph on what the history and replay show of the processes and cgroups."""


class HistoryActions:
    """The history keys' actions: each is a move of :attr:`scrubber`."""

    scrubber: Scrubber
    """The frame on screen when it is not the live one (the main screen's)."""
    panels: SidePanels
    """The side panel's tabs (the main screen's)."""
    config: Config
    """The settings (``diff_minutes``)."""
    diff_marks: dict[str, Window]
    """Windows marked with ``m`` (``a``) and ``M`` (``b``), not yet compared."""

    def action_mark_window(self, which: str) -> None:
        """``m``/``M``: mark window A/B as the ``diff_minutes`` ending at the frame shown;
        with both marked, show what changed."""
        end = self.scrubber.origin()
        if end is None:
            return
        screen: Any = self
        marks = self.__dict__.setdefault("diff_marks", {})
        pair = mark(marks, which, end, self.config.diff_minutes, screen.notify)
        if pair is not None:
            show_diff(screen, self.scrubber.timeline, *pair, self.scrubber.zone)

    def action_compare_recent(self) -> None:
        """``w``: the ``diff_minutes`` ending at the frame shown against the ones before."""
        end = self.scrubber.origin()
        if end is not None:
            a, b = windows_before(end, self.config.diff_minutes)
            show_diff(self, self.scrubber.timeline, a, b, self.scrubber.zone)

    def action_step(self, n: int) -> None:
        """One sample back or forward in the history."""
        self.scrubber.step(n)

    def action_seek(self, seconds: float) -> None:
        """One minute back or forward in the history."""
        self.scrubber.seek(seconds)

    def action_live(self) -> None:
        """Back to live (from history, or from a pause)."""
        self.scrubber.live()

    def on_replay_read(self, message: ReplayRead) -> None:
        """A replay's lookup came back from its worker: show it."""
        message.apply()

    def check_history_action(self, action: str) -> bool | None:
        """``l`` is offered (and shown) only away from live."""
        return action != "live" or self.scrubber.away_from_live

    def show_who(self, frame: Frame) -> None:
        """The Processes and Cgroups tabs (while shown) show ``frame``'s processes and
        cgroups; in history or a replay, "not recorded" where the frame has none."""
        recorded = self.scrubber.mode in (HISTORY, REPLAY)
        processes = cast("ProcessPanel | None", self.panels.mounted("tab-processes"))
        if processes is not None and processes.sampling:
            if recorded and frame.processes is None:
                processes.show_not_recorded()
            else:
                processes.show_processes(frame.processes, frame.process_error, disk_writes(frame))
        cgroups = cast("CgroupPanel | None", self.panels.mounted("tab-cgroups"))
        if cgroups is not None and cgroups.sampling:
            cgroups.show_cgroups(frame.cgroups, recorded=recorded, issuers=frame.get(IssuersPart))
        blocked = cast("BlockedPanel | None", self.panels.mounted("tab-blocked"))
        if blocked is not None and blocked.sampling:
            tasks = cast("BlockedTasks | None", frame.parts.get(blocked.KEY))
            blocked.show_blocked(tasks, recorded=recorded)
        files = cast("FilesPanel | None", self.panels.mounted("tab-files"))
        if files is not None and files.sampling:
            from iotop_plus.sampling.files.part import FilesPart

            files.show_files(frame.get(FilesPart), recorded)
        syncs = cast("SyncPanel | None", self.panels.mounted("tab-sync"))
        if syncs is not None and syncs.sampling:
            syncs.show_frame(frame, recorded=recorded)
