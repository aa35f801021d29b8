"""The selected device's latency: a heatmap (time across, log latency up, shade = count),
the current histogram, and where the time goes ("time in queue 82 %, in device 18 %").

Shown only with the ``latency`` column set, which is also what starts the tracer.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.widgets import Static

from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.latency_hist import FAILED, Histogram, LatencyFrame, bucket_bounds

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
    return f"{us / 1000:g}ms" if us >= 1000 else f"{us:g}us"


class LatencyView(Static):
    """Heatmap, histogram and queue/device split of one device."""

    DEFAULT_CSS = """
    LatencyView { height: auto; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self._heat: dict[str, deque[list[int]]] = {}

    def show_latency(self, latency: LatencyFrame | None, device: str | None) -> None:
        """Take a frame's latency part (every device's history) and draw ``device``."""
        self.record(latency)
        self.update(self.render_text(latency, device))

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

    def render_text(self, latency: LatencyFrame | None, device: str | None) -> Text:
        """What the view shows (pure: tests read it)."""
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
        heat = list(self._heat.get(device or "", ()))
        now = rows_of(dev.op("read").merged(dev.op("write"))) if dev is not None else []
        top = max((max(col) for col in heat), default=0) or 1
        now_top = max(now, default=0) or 1
        for r in reversed(range(len(ROW_EDGES_US))):
            text.append("\n")
            text.append(f"{'≥' + _label(ROW_EDGES_US[r]):>8} ", style="dim")
            cells = "".join(
                SHADES[min(len(SHADES) - 1, -(-col[r] * (len(SHADES) - 1) // top))] for col in heat
            )
            text.append(cells.rjust(HEAT_COLUMNS), style="cyan")
            count = now[r] if now else 0
            text.append(" │" + "■" * round(count * 16 / now_top) + (f" {count}" if count else ""))
        return text
