"""What changed, in the TUI: the two windows the history keys chose (``m`` and ``M`` mark
windows A and B, ``w`` compares the last N minutes with the N before:
:mod:`~iotop_plus.tui.screens.main_history`) compared, the ranked list of ``iotop-plus diff``
in a modal. Loaded with the first comparison (it loads the recorder's modules).

A window is the ``diff_minutes`` (the config's, default 10) ending at the frame shown (live:
the newest). Its frames come from the screen's timeline through :func:`window_frames`, the
one place that asks for them; each frame is summed up as the recorder would have stored it,
so the report is the one ``diff`` prints for the same recording. The comparison runs on a
worker thread (a replay's lookups may decode chunks) and the modal opens when it is done.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.collect import recorded_sample
from iotop_plus.record.diff_report import Report, compare, report_text
from iotop_plus.record.recorded_who import cgroups_part
from iotop_plus.record.window_stats import WindowStats
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.latency.hist_part import LatencyHistogramsPart, of_latency_frame
from iotop_plus.sampling.store.timeline import Timeline

Window = tuple[float, float]
_LATENCY = LatencyHistogramsPart()


def window_frames(timeline: Timeline, window: Window) -> list[Frame]:
    """The frames of ``window`` (start, end wall times), oldest first."""
    return timeline.window(window[1], window[1] - window[0])


def frame_record(frame: Frame) -> RecordedSample:
    """A frame as the recorder stores it (with its cgroups and latency histograms)."""
    rs = recorded_sample(frame, Roots(), 0)
    parts = dict(rs.parts)
    cgroups = cgroups_part(frame.cgroups)
    if cgroups is not None:
        parts["C"] = cgroups
    latency = of_latency_frame(frame.latency)
    if latency is not None:
        parts["Q"] = _LATENCY.to_json(latency)
    return RecordedSample(rs.sample, None, rs.pressure, rs.events, parts)


def summed(frames: Sequence[Frame], window: Window) -> WindowStats:
    """The window's frames summed up as :func:`iotop_plus.record.window_stats.window_stats`
    does a recording's samples."""
    stats = WindowStats(*window)
    before: RecordedSample | None = None
    for frame in frames:
        rs = frame_record(frame)
        stats.add(rs, before if frame.elapsed_s is not None else None)
        before = rs
    return stats


def frames_report(timeline: Timeline, a: Window, b: Window) -> Report:
    """The ranked changes from window ``a`` to window ``b`` of ``timeline``."""
    stats_a = summed(window_frames(timeline, a), a)
    stats_b = summed(window_frames(timeline, b), b)
    return compare(stats_a, stats_b, events=[*stats_a.events, *stats_b.events])


class DiffScreen(ModalScreen[None]):
    """The ranked list, scrollable; ``escape`` or ``q`` closes it."""

    BINDINGS = [Binding("escape,q", "close", "Close")]
    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    DiffScreen > VerticalScroll {
        width: 90%; height: 80%; border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, title: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = self.title_text
            yield Static("\n".join(self.lines), markup=False, id="diff-lines")

    def action_close(self) -> None:
        self.dismiss(None)


def show_diff(screen: Any, timeline: Timeline, a: Window, b: Window, zone: tzinfo | None) -> None:
    """Compare on a worker thread, then open :class:`DiffScreen` on ``screen``'s app."""
    from datetime import datetime

    tz = zone or datetime.now().astimezone().tzinfo
    assert tz is not None

    def work() -> None:
        try:
            report = frames_report(timeline, a, b)
        except Exception as exc:  # a worker's failure is shown, not raised
            lines = [f"diff failed: {str(exc)[:200]}"]
        else:
            lines = report_text(report, tz, limit=200)
            for name, stats in (("A", report.a), ("B", report.b)):
                if stats.intervals == 0:
                    lines.insert(1, f"window {name} holds no frames: the history keeps "
                                 "history_minutes (a recorder on this state directory adds "
                                 "more)")  # fmt: skip
        screen.app.call_from_thread(screen.app.push_screen, DiffScreen("What changed", lines))

    screen.run_worker(work, thread=True, exclusive=True, group="diff")
