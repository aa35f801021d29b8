"""The Files tab (key ``F``): the selected device's busiest files over the frame shown.

While the tab is on screen the panel asks the feed for the hot-files part (as root the
tracer then counts file I/O; see :mod:`iotop_plus.sampling.files.part`), and shows per file
its device reads, written-back and direct bytes per second, its path (or ``inode N on MOUNT
(not open)``), the partition its filesystem is on and its processes, then whose dirty pages
the flusher wrote back. Without root the figures are an estimate, and the first line says so.
"""

from __future__ import annotations

from typing import Protocol

from textual.widgets import Static

from iotop_plus.sampling.files.model import FileEntry, FilesFrame
from iotop_plus.text import compact_bytes, printable
from iotop_plus.tui.shown import Shown

MAX_PROCESS_NAMES = 3
"""Processes named on a file's line."""


class FilesFeed(Protocol):
    """What gives the panel the frames' files (the main screen's frame feed)."""

    def want_files(self, on: bool) -> str | None:
        """Frames carry files from now on (or no longer); why not, when they cannot."""
        ...


def _rate(n: int, seconds: float) -> str:
    return compact_bytes(n / seconds if seconds > 0 else float(n)) + "/s"


def file_line(f: FileEntry, seconds: float) -> str:
    """One file: read, written back and direct per second, path, partition, processes."""
    who = ", ".join(f"{p.comm}[{p.pid}]" for p in f.processes[:MAX_PROCESS_NAMES])
    if len(f.processes) > MAX_PROCESS_NAMES:
        who += f" +{len(f.processes) - MAX_PROCESS_NAMES}"
    return printable(
        f"{_rate(f.read_bytes, seconds):>9} {_rate(f.write_bytes, seconds):>9} "
        f"{_rate(f.direct_bytes, seconds):>9}  {f.path} ({f.partition})"
        + (f"  {who}" if who else "")
    )


def files_text(value: FilesFrame | None, device: str | None, recorded: bool) -> str:
    """The panel's text for ``device`` in ``value``."""
    if device is None:
        return "files: select a device"
    if value is None:
        return "files: not recorded" if recorded else "files: waiting for the first frame"
    lines: list[str] = []
    if value.note:
        lines.append(printable(value.note))
    dev = value.of(device)
    if dev is None or not dev.files:
        lines.append(f"no file I/O on {device} in this frame")
        return "\n".join(lines)
    lines.append(f"{'read':>9} {'written':>9} {'direct':>9}  file (partition)  processes")
    lines += [file_line(f, value.interval_s) for f in dev.files]
    if dev.other_read_bytes or dev.other_write_bytes:
        lines.append(
            f"{_rate(dev.other_read_bytes or 0, value.interval_s):>9} "
            f"{_rate(dev.other_write_bytes or 0, value.interval_s):>9} "
            f"{'':>9}  other (metadata, journal, files past the list)"
        )
    if dev.dirtiers:
        names = ", ".join(f"{d.comm}[{d.pid}] {d.share * 100:.0f} %" for d in dev.dirtiers[:3])
        lines.append(printable(f"written back for: {names}"))
    return "\n".join(lines)


class FilesPanel(Static):
    """The selected device's files (see the module's docstring)."""

    def __init__(self, feed: FilesFeed | None = None, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.feed = feed
        self.device: str | None = None
        self.value: FilesFrame | None = None
        self.recorded = False
        self.sampling = False
        """Whether the tab is on screen (the frames then carry files)."""

    def on_show(self) -> None:
        self._want(True)

    def on_hide(self) -> None:
        self._want(False)

    def on_unmount(self) -> None:
        self._want(False)

    def _want(self, on: bool) -> None:
        if on != self.sampling:
            self.sampling = on
            refused = self.feed.want_files(on) if self.feed is not None else None
            if refused is not None:
                self.sampling = False
                self.update(printable(f"files: not read here ({refused})"))

    def set_device(self, name: str | None) -> None:
        """The table's selection moved to ``name``."""
        if name != self.device:
            self.device = name
            self.update(files_text(self.value, self.device, self.recorded))

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its files (while the tab is shown)."""
        if self.sampling and shown.frame is not None:
            from iotop_plus.sampling.files.part import FilesPart

            self.show_files(shown.frame.get(FilesPart), shown.recorded)

    def show_files(self, value: FilesFrame | None, recorded: bool) -> None:
        """The frame shown's files (``recorded``: a frame of the history or a replay)."""
        self.value, self.recorded = value, recorded
        self.update(files_text(value, self.device, recorded))
