"""The main screen's charts: what window of which history they draw, and when.

The charts are drawn only when on screen and only when a point arrived (a newer frame live,
another frame when scrubbed), or when forced (a new mark, a view switch).
"""

from __future__ import annotations

from iotop_plus.sampling.store.history import History
from iotop_plus.tui.scrub import Scrubber
from iotop_plus.tui.widgets.charts import MIN_SPAN_INTERVALS, DeviceCharts


class ChartWindow:
    """Draws the selected device's window of the history (or of the frames scrubbed to).

    Args:
        history: Recent rates per device, and the marks, for the live charts.
        scrubber: The frame shown when scrubbed, and the timeline its window comes from.
    """

    def __init__(self, history: History, scrubber: Scrubber) -> None:
        self.history = history
        self.scrubber = scrubber

    def draw(
        self,
        charts: DeviceCharts,
        device: str | None,
        now: float,
        interval: float,
        force: bool,
    ) -> None:
        """Draw ``device``'s charts ending at ``now`` (live) or at the frame scrubbed to."""
        if not charts.is_on_screen and not force:
            return
        min_span = MIN_SPAN_INTERVALS * interval
        scrub = self.scrubber
        if scrub.scrubbed:  # the window of frames ending at the one shown
            span = self.history.capacity * interval
            hist, marks, end = scrub.chart_window(device, self.history, span)
            if force or charts.due(device, end):
                kept = scrub.timeline.span()
                start = max(end - span, kept[0]) if kept else None
                charts.draw(
                    device, hist, marks, end, at=scrub.clock(end), start=start, min_span=min_span
                )
            return
        if not force and not charts.due(device, now):
            return
        hist = self.history.get(device) if device else None
        history = self.history
        charts.draw(device, hist, history.marks, now, start=history.oldest(), min_span=min_span)
