"""The selected device's latency: a heatmap (time across, log latency up, shade = count),
the current histogram, and where the time goes ("time in queue 82 %, in device 18 %").

Shown only with the ``latency`` column set, which is also what starts the tracer.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.widgets import Static

from iotop_plus.sampling.latency.hist import FAILED, Histogram, LatencyFrame, bucket_bounds
from iotop_plus.text import printable
from iotop_plus.tui.shown import Shown

ROW_EDGES_US: tuple[float, ...] = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)
"""Lower edges of the heatmap rows in us (4x apart: 16 us to 262 ms and above)."""
SHADES = " ░▒▓█"
"""Empty to most requests in a column."""
HEAT_COLUMNS = 48
"""Frames the heatmap keeps per device (the newest on the right)."""


def rows_of(hist: Histogram) -> list[int]:
    """Counts per heatmap row (the first row also holds faster requests)."""
    out = [0] * len(ROW_EDGES_US)
    for index, count in hist.buckets.items():
        low_us = bucket_bounds(index)[0] / 1000
        row = 0
        for i, edge in enumerate(ROW_EDGES_US):
            if low_us >= edge:
                row = i
        out[row] += count
    return out


def _label(us: float) -> str:
    """A row's lower edge in whole units: 16us, 1ms, 66ms (65.536 ms read "65.536ms" and
    pushed its row's bars out of line)."""
    return f"{us / 1000:.0f}ms" if us >= 1000 else f"{us:.0f}us"


LABELS = tuple("≥" + _label(edge) for edge in ROW_EDGES_US)
LABEL_WIDTH = max(map(len, LABELS))
"""Every row label is right-aligned to this width, so the heatmap and bars line up."""
BAR_CELLS = 16
"""The busiest bucket's bar, where the width allows."""
MIN_HEAT_COLUMNS = 12
MIN_BAR_CELLS = 4
DEFAULT_WIDTH = 100
"""Cells to fit when the view has not been laid out yet (tests, before the first resize)."""


def fit(width: int, count_width: int) -> tuple[int, int]:
    """(heatmap columns, bar cells) that fit ``width`` beside the labels and a count of
    ``count_width`` characters: the heatmap gives way first, then the bars."""
    fixed = LABEL_WIDTH + 1 + 2 + 1 + count_width  # label, space, " │", space, count
    room = max(width - fixed, 0)
    bar = BAR_CELLS
    heat = min(HEAT_COLUMNS, room - bar)
    if heat < MIN_HEAT_COLUMNS:
        heat = MIN_HEAT_COLUMNS
        bar = max(MIN_BAR_CELLS, room - heat)
        if heat + bar > room:
            heat = max(room - bar, 0)
    return heat, bar


class LatencyView(Static):
    """Heatmap, histogram and queue/device split of one device."""

    DEFAULT_CSS = """
    LatencyView { height: auto; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._heat: dict[str, deque[list[int]]] = {}
        self._shown: tuple[LatencyFrame | None, str | None] = (None, None)

    def set_device(self, name: str | None) -> None:
        """The table's selection moved to ``name``: draw its latency (while shown)."""
        if name != self._shown[1]:
            self._shown = (self._shown[0], name)
            if self.display:
                self.redraw()

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: draw its latency (while shown)."""
        frame = shown.frame
        if self.display and frame is not None and frame.latency is not self._shown[0]:
            self.show_latency(frame.latency, self._shown[1])

    def show_latency(self, latency: LatencyFrame | None, device: str | None) -> None:
        """Take a frame's latency part (every device's history) and draw ``device``."""
        self.record(latency)
        self._shown = (latency, device)
        self.update(self.render_text(latency, device))

    def redraw(self) -> None:
        """Draw the last frame shown again (fitted to the width now)."""
        self.update(self.render_text(*self._shown))

    def on_resize(self) -> None:
        self.redraw()

    def record(self, latency: LatencyFrame | None) -> None:
        """Add a frame's latency to every device's heatmap history (bounded)."""
        if latency is not None and latency.has_figures:
            for name in list(self._heat):
                if name not in latency.devices and latency.span_s:
                    self._heat[name].append([0] * len(ROW_EDGES_US))
            for name, dev in latency.devices.items():
                hist = dev.op("read").merged(dev.op("write"))
                self._heat.setdefault(name, deque(maxlen=HEAT_COLUMNS)).append(rows_of(hist))
            for name in [n for n, h in self._heat.items() if not any(map(any, h))]:
                del self._heat[name]  # idle for a whole heatmap (or vanished): forget it

    def render_text(
        self, latency: LatencyFrame | None, device: str | None, width: int | None = None
    ) -> Text:
        """What the view shows in ``width`` cells (default: its own), for tests to read.

        The heatmap and the bars are fitted so that each row, with its count, is one line."""
        if width is None:
            width = self.content_region.width or DEFAULT_WIDTH
        text = Text()
        name = printable(device or "-")
        if latency is None:
            return Text("latency: not traced")
        if not latency.has_figures:
            style = "red" if latency.state == FAILED else "dim"
            return Text(f"latency: {printable(latency.status or 'starting tracer…')}", style=style)
        dev = latency.devices.get(device or "")
        share = dev.queue_share() if dev is not None else None
        text.append(f"{name} latency (device time, read+write)", style="bold")
        if share is not None:
            text.append(
                f"   time in queue {share * 100:.0f} %, in device {(1 - share) * 100:.0f} %"
            )
        else:
            text.append("   time in queue -, in device -")
        if dev is not None and dev.sampled > 1:  # counts below are the sample's
            text.append(f"   sampled 1 in {dev.sampled}", style="dim")
        now = rows_of(dev.op("read").merged(dev.op("write"))) if dev is not None else []
        now_top = max(now, default=0) or 1
        columns, bar_cells = fit(width, len(str(max(now, default=0))))
        heat = list(self._heat.get(device or "", ()))[-columns:] if columns else []
        top = max((max(col) for col in heat), default=0) or 1
        for r in reversed(range(len(ROW_EDGES_US))):
            text.append("\n")
            text.append(f"{LABELS[r]:>{LABEL_WIDTH}} ", style="dim")
            cells = "".join(
                SHADES[min(len(SHADES) - 1, -(-col[r] * (len(SHADES) - 1) // top))] for col in heat
            )
            text.append(cells.rjust(columns), style="cyan")
            count = now[r] if now else 0
            bar = "■" * round(count * bar_cells / now_top)
            text.append(" │" + bar + (f" {count}" if count else ""))
        return text
