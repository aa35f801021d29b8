"""The Blocked tab (key ``B``): threads stuck in uninterruptible sleep, grouped by reason, file
or mount, and cgroup (:mod:`iotop_plus.sampling.blocked.model`).

While shown the panel asks its feed for the ``blocked`` part, and the frames then carry it
(:meth:`BlockedPanel.show_blocked`). A group is one line: how many threads, how long the
oldest waited, why, the call and the file (else the mount), the device, the cgroup and the
processes; what the kernel would not show is said under them. In history and replay the panel
shows the frame's groups, or says they were not recorded: never the live ones.
"""

from __future__ import annotations

from typing import Protocol, cast

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from iotop_plus.sampling.blocked.model import REASON_TEXT, BlockedGroup, BlockedTasks
from iotop_plus.text import printable
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.while_shown import WhileShown

KEY = "blocked"
"""The frame part this panel shows."""
NOT_RECORDED = (
    "Blocked: not recorded at this time (the history keeps them only while this tab is shown; "
    "a recorder keeps them with --blocked)"
)
WAITING = "Blocked: the first frame with blocked tasks comes with the next sample"


class BlockedFeed(Protocol):
    """What gives the panel its part: the main screen's frame feed (the one clock)."""

    def want_part(self, key: str, on: bool) -> None:
        """Frames carry part ``key`` from now on (or no longer)."""
        ...


def group_line(g: BlockedGroup) -> str:
    """One group in one printable line."""
    where = g.file or (f"mount {g.mount}" if g.mount else "file not known")
    call = g.syscall or "-"
    pids = ",".join(str(p) for p in g.pids[:5]) + ("…" if len(g.pids) > 5 else "")
    parts = [
        f"{g.count:>4}",
        f"{g.oldest_s:>6.0f}s",
        REASON_TEXT.get(g.reason, g.reason),
        call,
        where,
        f"on {g.device}" if g.device else "",
        f"cgroup {g.cgroup}" if g.cgroup else "",
        f"pid {pids} {g.comm}".rstrip(),
        f"wait {g.wait}" if g.wait else "wait hidden",
    ]
    return printable("  ".join(p for p in parts if p))


def blocked_text(tasks: BlockedTasks) -> tuple[str, str]:
    """The status line and the groups' lines."""
    status = (
        f"Blocked: {tasks.count} threads in D of {tasks.threads} "
        f"(every thread looked at {tasks.scan_age_s:.0f} s ago; new ones show at the next scan)"
    )
    lines = [group_line(g) for g in tasks.groups] or ["no thread is blocked"]
    lines += [printable(n) for n in tasks.notes()]
    return status, "\n".join(lines)


class BlockedPanel(WhileShown, Vertical, can_focus=False):
    """The blocked threads of the frame on screen, grouped."""

    KEY = KEY
    """The frame part it shows."""

    DEFAULT_CSS = """
    BlockedPanel { height: 1fr; }
    BlockedPanel #blocked-status { height: auto; }
    BlockedPanel #blocked-groups { height: 1fr; }
    """

    def __init__(self, feed: BlockedFeed | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.feed = feed

    def compose(self) -> ComposeResult:
        yield Static(WAITING, id="blocked-status", markup=False)
        with VerticalScroll(id="blocked-scroll"):
            yield Static("", id="blocked-groups", markup=False)

    def can_want(self) -> bool:
        return self.feed is not None

    def shown_changed(self, on: bool) -> None:
        assert self.feed is not None
        self.feed.want_part(KEY, on)

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its blocked threads (while the tab is shown)."""
        if self.sampling and shown.frame is not None:
            tasks = cast("BlockedTasks | None", shown.frame.parts.get(KEY))
            self.show_blocked(tasks, shown.recorded)

    def show_blocked(self, tasks: BlockedTasks | None, recorded: bool) -> None:
        """Show a frame's blocked threads; ``recorded``: the frame is from the history or a
        replay (without the part it was not recorded)."""
        if tasks is None:
            status, body = (NOT_RECORDED if recorded else WAITING), ""
        else:
            status, body = blocked_text(tasks)
        self.query_one("#blocked-status", Static).update(status)
        self.query_one("#blocked-groups", Static).update(body)
