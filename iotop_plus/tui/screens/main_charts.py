"""The main screen's charts: what window of the frame store they draw, and when.

One path, on wall time: the window of ``points`` intervals ending at the frame shown (the
newest one live, the frozen one paused, the one scrubbed to, or a replayed one). The charts
are drawn only when on screen and only when a point arrived (another frame shown), or when
forced (a new mark, a view switch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from iotop_plus.tui.scrub import Scrubber
from iotop_plus.tui.shown import Shown

if TYPE_CHECKING:
    from iotop_plus.tui.screens.later_parts import LaterParts
    from iotop_plus.tui.widgets.charts import DeviceCharts


class ChartsView(Protocol):
    """The screen the charts are on: the device they are about, the interval, and the
    charts' widget once it is up (:class:`~.later_parts.LaterParts`)."""

    selected_device: str | None
    interval: float
    later: LaterParts


class ChartWindow:
    """Draws the selected device's window of the frames, ending at the frame shown.

    Args:
        points: Intervals the charts span (``history_points``).
        scrubber: The frame shown, and the timeline its window comes from.
        view: The main screen (the charts are mounted there after the first paint).
    """

    def __init__(self, points: int, scrubber: Scrubber, view: ChartsView) -> None:
        self.points = points
        self.scrubber = scrubber
        self.view = view

    def show_shown(self, _shown: Shown) -> None:
        """The frame on screen changed: the charts' window ends there now."""
        self.draw(force=False)

    def draw(self, force: bool) -> None:
        """Draw the selected device's charts ending at the frame shown (once they are
        mounted: until then there is nothing to draw)."""
        charts = self.view.later.charts()
        if charts is not None:
            self._draw(charts, self.view.selected_device, self.view.interval, force)

    def _draw(self, charts: DeviceCharts, device: str | None, interval: float, force: bool) -> None:
        from iotop_plus.tui.widgets.charts import min_span  # loaded with the charts

        if not charts.is_on_screen and not force:
            return
        scrub = self.scrubber
        end = scrub.origin()
        if end is None or not (force or charts.due(device, end)):
            return
        span = self.points * interval
        columns, marks = scrub.chart_window(device, span)
        kept = scrub.timeline.span()
        start = max(end - span, kept[0]) if kept else None
        at = scrub.clock(end) if scrub.scrubbed else None
        charts.draw(
            device,
            columns.with_rates() if columns is not None else None,
            marks,
            end,
            at=at,
            start=start,
            min_span=min_span(interval, span),
        )
