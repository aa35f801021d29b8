"""The Processes tab's "this device only" mode (key ``v``): only the selected device's issuers.

A mixin of :class:`~iotop_plus.tui.widgets.process_panel.ProcessPanel`. While it is on, the
panel asks the feed for the frame's issuers (the tracer then charges each request to its
process: ``LiveSource.want(ISSUERS)``), keeps the rows of the processes that issued requests
to the selected device, sorted by their requests per second there, and shows their device
latency (:data:`~iotop_plus.tui.process_rows.DEVICE_COLUMNS`). Without the tracer (no root,
no bpftrace) the issuers are an estimate from ``/proc/PID/io`` and open files, and the
status line says so. The kernel's own I/O (the flusher's writeback, a loop device's worker,
a throttle's dispatch, a journal) is no process row: the status line gives each kind's share.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from iotop_plus.sampling.processes.issuers import Issuer, IssuersFrame
from iotop_plus.sampling.processes.issuers_part import IssuersPart

__all__ = [
    "DeviceOnly",
    "IssuerFeed",
]
from iotop_plus.text import compact_bytes
from iotop_plus.tui.process_rows import DEVICE_SORT_KEYS, SORT_KEYS
from iotop_plus.tui.shown import Shown


class IssuerFeed(Protocol):
    """What gives the panel the frames' issuers (the main screen's frame feed)."""

    def want_issuers(self, on: bool) -> None:
        """Frames carry issuers from now on (or no longer)."""
        ...


class DeviceOnly:
    """The "this device only" state and key of the Processes panel."""

    feed: Any
    shown: Shown = Shown()
    """The frame on screen, its mode and position (the panel is told each)."""
    ASCENDING_KEYS: ClassVar[frozenset[str]]
    device_only: bool = False
    """Only the selected device's issuers are listed."""
    device: str | None = None
    """The device selected in the table (the main screen tells every panel)."""

    def set_device(self, name: str | None) -> None:
        """The table's selection moved to ``name`` (the main screen calls every panel)."""
        if name == self.device:
            return
        self.device = name
        if self.device_only:
            self.rerender()

    @property
    def device_filter(self) -> str | None:
        """The device whose issuers the rows are limited to (None: every process)."""
        return self.device if self.device_only else None

    def action_toggle_device_only(self) -> None:
        """Only the selected device's issuers, with their latency there, or every process."""
        self.device_only = not self.device_only
        want = getattr(self.feed, "want_issuers", None)
        if want is not None:
            want(self.device_only)
        plist = self.sorted_list
        plist.sort = "dev_iops" if self.device_only else "total"
        plist.descending = True
        plist.device_mode = self.device_only
        self.rerender()

    def action_sort(self, step: int) -> None:
        """Sort by the next (1) or previous (-1) column; the device columns too in this mode."""
        keys = DEVICE_SORT_KEYS if self.device_only else SORT_KEYS
        plist = self.sorted_list
        at = keys.index(plist.sort) if plist.sort in keys else 0
        plist.sort = keys[(at + step) % len(keys)]
        plist.descending = plist.sort not in self.ASCENDING_KEYS
        self.rerender()

    def shown_issuers(self) -> IssuersFrame | None:
        """The issuers of the frame on screen."""
        frame = self.shown.frame
        return frame.get(IssuersPart) if frame is not None else None

    def device_issuers(self) -> tuple[Issuer, ...]:
        """The selected device's issuers in the frame on screen (empty when none)."""
        issuers = self.shown_issuers()
        if issuers is None or self.device is None:
            return ()
        return issuers.of(self.device)

    def device_status(self) -> str | None:
        """The status line of the mode (None while it is off)."""
        if not self.device_only:
            return None
        if self.device is None:
            return "v: this device only (no device selected)"
        issuers = self.shown_issuers()
        if issuers is None and self.shown.recorded:
            return f"v: issuers of {self.device} not recorded at this time"
        if issuers is None:
            return f"v: issuers of {self.device} (waiting for the tracer…)"
        head = f"v: issuers of {self.device}"
        if issuers.estimate:
            head += f" (estimated from /proc/PID/io: {issuers.status or 'no tracer'})"
        for kernel in (i for i in issuers.of(self.device) if i.is_kernel):
            target = " ".join(t for t in (kernel.for_device, kernel.for_cgroup) if t)
            what = f"kernel {kernel.kind or 'other'}"
            if target and kernel.kind in ("loop", "throttle", "journal"):
                what += f" ({target})"
            head += (
                f" · {what} {kernel.iops:.0f} IO/s "
                f"{compact_bytes((kernel.rkB_s + kernel.wkB_s) * 1024)}/s"
            )
        return head

    # Provided by the panel.
    sorted_list: Any

    def rerender(self) -> None:
        """Redraw rows and status (the panel's)."""
        raise NotImplementedError
