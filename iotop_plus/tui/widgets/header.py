"""The one-line header: host, kernel, uptime, the frame's wall-clock time, refresh interval,
LIVE / PAUSED at T / HISTORY at T / REPLAY at T (with the zone when not the viewer's), root
or not."""

from __future__ import annotations

import time
from datetime import tzinfo

from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.text import clock_text, printable, uptime, zone_label
from iotop_plus.tui.engine.refresh_batch import BatchedRepaint
from iotop_plus.tui.shown import LIVE, Shown
from iotop_plus.tui.widgets.device_rows import hidden_note
from iotop_plus.tui.widgets.plain_lines import plain_lines

MODES = {
    "live": "LIVE",
    "paused": "PAUSED at",
    "history": "HISTORY at",
    "replay": "REPLAY at",
}
"""What the header says in each mode (the frame's time follows all but LIVE)."""
REPLAY_WHO = "settings not changed in replay"
"""What the header says about settings in a replay, in place of root / not root."""
MODE_STYLES = {
    "live": "bold green",
    "paused": "bold black on yellow",
    "history": "bold black on cyan",
    "replay": "bold black on magenta",
}
PROBLEM_SHOWN_S = 5.0
"""A sampling problem stays in the header at least this long, so it can be read."""


class HostHeader(BatchedRepaint, Static):
    """Who and what we are looking at, and whether the figures are live."""

    DEFAULT_CSS = """
    HostHeader { height: 1; }
    """

    def __init__(
        self,
        host: HostInfo,
        interval: float,
        *,
        zone: tzinfo | None = None,
        id: str | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__(id=id)
        self.read_only = read_only
        """Started with ``--read-only``: no tuning, probes or experiments."""
        self.host = host
        """Host facts read at start."""
        self.interval = interval
        """Seconds between samples."""
        self.mode = "live"
        """``live``, ``paused``, ``history`` or ``replay``."""
        self.zone = zone
        """The zone times are shown in (a recording's host); None for the viewer's own."""
        self.uptime_s = host.uptime_s
        """Uptime at the last shown sample."""
        self.note = ""
        """A short status (e.g. the last problem), shown at the right."""
        self.wall_time: float | None = None
        """Wall-clock time of the frame on screen."""
        self.hidden: tuple[int, str | None, str] = (0, None, "busy")
        """Devices the table hides by default, the one among them named here, and why
        (``throttled`` or ``busy``)."""
        self._line = Text()
        self._strip: Strip | None = None
        """The line as last rendered (at its width)."""
        self._painted: tuple[object, ...] = ()
        self._started: float | None = None
        """Monotonic time of the first live frame shown (the uptime counts on from it)."""
        self._problem_at = float("-inf")

    def on_mount(self) -> None:
        self._paint()

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: its time, the mode, the uptime then, and the first
        bad line it read (a problem told stays :data:`PROBLEM_SHOWN_S` at least)."""
        frame = shown.frame
        if frame is None:
            self.show(mode=shown.mode)
            return
        if self._started is None and shown.mode == LIVE:
            self._started = frame.sample.monotonic
        start = self._started if self._started is not None else frame.monotonic
        up = self.host.uptime_s
        note: str | None = None
        problems = frame.sample.problems
        if problems:
            first = problems[0]
            # The file's name, not its path: a captured tree's path would push the reason off
            # the line (the full path is in snapshot's warnings).
            where = first.source.rsplit("/", 1)[-1]
            note = f"{len(problems)} bad line(s) in {where}: {first.reason}"
        elif self.note and time.monotonic() - self._problem_at >= PROBLEM_SHOWN_S:
            note = ""
        self.show(
            mode=shown.mode,
            wall_time=frame.wall_time,
            uptime_s=None if up is None else up + frame.sample.monotonic - start,
            note=note,
        )

    def show_problem(self, text: str) -> None:
        """Show a one-line problem (a failed tick) for a few seconds."""
        self._problem_at = time.monotonic()
        self.show(note=text)

    def show(
        self,
        *,
        interval: float | None = None,
        paused: bool | None = None,
        mode: str | None = None,
        uptime_s: float | None = None,
        note: str | None = None,
        wall_time: float | None = None,
        hidden: tuple[int, str | None, str] | None = None,
    ) -> None:
        """Change what the header says; its text is composed again only when a figure changed,
        and repainted only when the text did (once per frame, not once per figure)."""
        if hidden is not None:
            self.hidden = hidden
        if interval is not None:
            self.interval = interval
        if paused is not None:
            self.mode = "paused" if paused else "live"
        if mode is not None:
            self.mode = mode
        if uptime_s is not None:
            self.uptime_s = uptime_s
        if note is not None:
            self.note = note
        if wall_time is not None:
            self.wall_time = wall_time
        if self._figures() != self._painted:
            self._paint()

    def _figures(self) -> tuple[object, ...]:
        """What the header's text is made of (beyond the host and the width)."""
        return (
            self.hidden,
            self.interval,
            self.mode,
            self.uptime_s,
            self.note,
            self.wall_time,
            self.zone,
            self.read_only,
        )

    @property
    def text(self) -> str:
        """The header as plain text."""
        return self._compose_text().plain

    def _compose_text(self) -> Text:
        # Narrow (80 columns beside the pressure gauge): the kernel and uptime give way, then
        # the busy hidden device's name ("9 hidden (a)"), then the program's name, so the
        # time, LIVE/PAUSED, root and the hidden note stay on screen.
        width = self.size.width
        text = self._full_text(compact=False)
        for level in (1, 2, 3):
            if not 0 < width < len(text.plain):
                break
            text = self._full_text(compact=True, level=level)
        return text

    def on_resize(self) -> None:
        self._paint()

    def _full_text(self, compact: bool, level: int = 1) -> Text:
        host = self.host
        clock = ""
        if self.wall_time is not None:
            clock = clock_text(self.wall_time, self.zone, self._today())
            zone = zone_label(self.zone, self.wall_time)
            clock += f" {zone}" if zone else ""
        live = self.mode == "live"
        words = MODES.get(self.mode, "LIVE")
        state = (words if live or not clock else f"{words} {clock}", MODE_STYLES[self.mode])
        # Gold, not the ANSI "yellow" (an orange that shows as red in 16 colours).
        who = ("root", "green") if host.is_root else ("not root: settings read-only", "#ffd000")
        if self.read_only:
            who = ("root, read-only" if host.is_root else "read-only", "bold #ffd000")
        if self.mode == "replay":
            # The recorded frames are not this host now: whoever runs the replay, root or
            # not, changes no setting (the recording's host facts say nothing about the viewer).
            who = (REPLAY_WHO, "#ffd000")
        parts: list[tuple[str, str] | str] = [
            ("" if level >= 3 else "iotop-plus ", "bold"),
            (printable(host.hostname), "bold"),
            "  ",
            "" if compact else printable(host.kernel),
            "" if compact else f"  up {uptime(self.uptime_s)}  ",
            (f"{clock}  " if clock and live else ""),
            f"every {self.interval:g}s  ",
            state,
            "  ",
            who,
        ]
        count, busy, why = self.hidden
        if count and busy is not None:  # the incident may be on a device the table hides
            text = f"{count} hidden (a)" if level >= 2 else hidden_note(count, busy, 80, why)
            parts += ["  ", (text, "bold #ffd000")]
        if self.note:
            parts += ["  ", (printable(self.note), "yellow")]
        return Text.assemble(*parts, no_wrap=True, overflow="ellipsis")

    @property
    def paused(self) -> bool:
        """Whether the display is frozen (paused, in history or in a replay)."""
        return self.mode != "live"

    def _today(self) -> float | None:
        # A replay of another day shows the date; live and history are today's.
        return time.time() if self.mode == "replay" else None

    def _paint(self) -> None:
        self._painted = self._figures()
        text = self._compose_text()
        if text != self._line:  # rich compares the text and its styles
            self._line, self._strip = text, None
            self.refresh()  # one line, as wide as the bar: no reflow

    def render_lines(self, crop: Region) -> list[Strip]:
        """The line as :meth:`render_line` gives it where the bar's styles add nothing to it
        (:mod:`.plain_lines`), else through Textual's styles cache."""
        lines = plain_lines(self, crop, self.size.width, self.render_line)
        return super().render_lines(crop) if lines is None else lines

    def render_line(self, y: int) -> Strip:
        """The line, rendered from its text alone: a Static's update and render (Textual's
        Content, wrapping, a visual) costs several times as much, every second
        (docs/performance.md)."""
        width, style = self.size.width, self.visual_style.rich_style  # the theme's, now
        if y != 0:
            return Strip.blank(width, style)
        if self._strip is None or self._strip.cell_length != width:
            line = self._line.copy()
            line.truncate(width, overflow="ellipsis")
            segments = list(line.render(self.app.console))
            self._strip = Strip(segments).apply_style(style).crop_extend(0, width, style)
        return self._strip
