"""The main screen's charts: what window of which history they draw, and when.

A mixin of :class:`~iotop_plus.tui.screens.main.MainScreen`. The charts are drawn only
when on screen and only when a point arrived (a newer frame live, another frame when
scrubbed), or when forced (a new mark, a view switch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from iotop_plus.tui.widgets.charts import MIN_SPAN_INTERVALS, DeviceCharts

if TYPE_CHECKING:
    from iotop_plus.tui.screens.main import MainScreen


class ChartActions:
    """Drawing the charts of the main screen (mixed into it)."""

    def _draw_charts(self, now: float, force: bool) -> None:
        main = cast("MainScreen", self)
        charts = main.query_one(DeviceCharts)
        if not charts.is_on_screen and not force:
            return
        min_span = MIN_SPAN_INTERVALS * main.interval
        scrub = main.scrubber
        if scrub.scrubbed:  # the window of frames ending at the one shown
            span = main.history.capacity * main.interval
            hist, marks, end = scrub.chart_window(main.selected_device, main.history, span)
            if force or charts.due(main.selected_device, end):
                kept = scrub.timeline.span()
                start = max(end - span, kept[0]) if kept else None
                charts.draw(
                    main.selected_device,
                    hist,
                    marks,
                    end,
                    at=scrub.clock(end),
                    start=start,
                    min_span=min_span,
                )
            return
        if not force and not charts.due(main.selected_device, now):
            return
        name = main.selected_device
        hist = main.history.get(name) if name else None
        charts.draw(
            name, hist, main.history.marks, now, start=main.history.oldest(), min_span=min_span
        )
