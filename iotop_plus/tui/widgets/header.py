"""The one-line header: host, kernel, uptime, the frame's wall-clock time, refresh interval,
LIVE / PAUSED at T, root or not."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.sampler import HostInfo


def format_uptime(seconds: float | None) -> str:
    """``3d 04:05`` style uptime; ``?`` when unknown."""
    if seconds is None:
        return "?"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    return f"{days}d {hours:02d}:{minutes:02d}" if days else f"{hours:02d}:{minutes:02d}"


class HostHeader(Static):
    """Who and what we are looking at, and whether the figures are live."""

    DEFAULT_CSS = """
    HostHeader { height: 1; }
    """

    def __init__(self, host: HostInfo, interval: float, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host = host
        """Host facts read at start."""
        self.interval = interval
        """Seconds between samples."""
        self.paused = False
        """Whether the display is frozen."""
        self.uptime_s = host.uptime_s
        """Uptime at the last shown sample."""
        self.note = ""
        """A short status (e.g. the last problem), shown at the right."""
        self.wall_time: float | None = None
        """Wall-clock time of the frame on screen."""
        self._shown = ""

    def on_mount(self) -> None:
        self._paint()

    def show(
        self,
        *,
        interval: float | None = None,
        paused: bool | None = None,
        uptime_s: float | None = None,
        note: str | None = None,
        wall_time: float | None = None,
    ) -> None:
        """Change what the header says; repaints only when the text changes."""
        if interval is not None:
            self.interval = interval
        if paused is not None:
            self.paused = paused
        if uptime_s is not None:
            self.uptime_s = uptime_s
        if note is not None:
            self.note = note
        if wall_time is not None:
            self.wall_time = wall_time
        self._paint()

    @property
    def text(self) -> str:
        """The header as plain text."""
        return self._compose_text().plain

    def _compose_text(self) -> Text:
        full = self._full_text(compact=False)
        # Narrow (80 columns beside the pressure gauge): the kernel and uptime give way, so
        # the time, LIVE/PAUSED and root stay on screen.
        if 0 < self.size.width < len(full.plain):
            return self._full_text(compact=True)
        return full

    def on_resize(self) -> None:
        self._paint()

    def _full_text(self, compact: bool) -> Text:
        host = self.host
        clock = time.strftime("%H:%M:%S", time.localtime(self.wall_time)) if self.wall_time else ""
        if self.paused:
            state = (f"PAUSED at {clock}" if clock else "PAUSED", "bold black on yellow")
        else:
            state = ("LIVE", "bold green")
        who = ("root", "green") if host.is_root else ("not root: settings read-only", "yellow")
        parts: list[tuple[str, str] | str] = [
            ("iotop-plus ", "bold"),
            (printable(host.hostname), "bold"),
            "  ",
            "" if compact else printable(host.kernel),
            "" if compact else f"  up {format_uptime(self.uptime_s)}  ",
            (f"{clock}  " if clock and not self.paused else ""),
            f"every {self.interval:g}s  ",
            state,
            "  ",
            who,
        ]
        if self.note:
            parts += ["  ", (printable(self.note), "yellow")]
        return Text.assemble(*parts, no_wrap=True, overflow="ellipsis")

    def _paint(self) -> None:
        text = self._compose_text()
        if text.plain != self._shown:
            self._shown = text.plain
            self.update(text)
