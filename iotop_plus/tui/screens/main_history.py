"""The main screen's history keys (``[ ] { } g l``) and its probe marks.

A mixin of :class:`~iotop_plus.tui.screens.main.MainScreen`: the moves themselves are the
screen's :class:`~iotop_plus.tui.scrub.Scrubber`; here are the actions the keys run and what
the screen says about them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from iotop_plus.sampling.history import Mark
from iotop_plus.tui.scrub import LIVE
from iotop_plus.tui.widgets.header import HostHeader

if TYPE_CHECKING:
    from iotop_plus.tui.screens.main import MainScreen
    from iotop_plus.tui.widgets.probe_panel import ProbePanel


class HistoryActions:
    """The history keys of the main screen (mixed into it)."""

    @property
    def _main(self) -> MainScreen:
        return cast("MainScreen", self)

    def show_mode(self, mode: str, wall_time: float | None) -> None:
        """The header says LIVE, PAUSED at T, HISTORY at T or REPLAY at T."""
        self._main.query_one(HostHeader).show(mode=mode, wall_time=wall_time)
        self._main.refresh_bindings()  # "l Live" shows only away from live

    def action_step(self, n: int) -> None:
        """One sample back or forward in the history."""
        self._main.scrubber.step(n)

    def action_seek(self, seconds: float) -> None:
        """One minute back or forward in the history."""
        self._main.scrubber.seek(seconds)

    def action_jump(self) -> None:
        """Ask for a time and go there."""
        scrub = self._main.scrubber
        span = scrub.timeline.span()
        if span is None:
            self._main.notify("no history yet", timeout=3)
            return
        from iotop_plus.sampling.timeparse import zone_label
        from iotop_plus.tui.screens.jump import JumpScreen

        zone = zone_label(scrub.zone, span[1])
        hint = f"kept: {scrub.clock(span[0])} to {scrub.clock(span[1])}"
        hint += f" ({zone}; times without an offset are in it)" if zone else ""
        self._main.app.push_screen(JumpScreen(scrub.jump, hint))

    def action_live(self) -> None:
        """Back to live (from history, or from a pause)."""
        self._main.scrubber.live()

    def check_history_action(self, action: str) -> bool | None:
        """``l`` is offered (and shown) only away from live."""
        if action != "live":
            return True
        return self._main.scrubber.mode != LIVE or self._main.paused

    # ---- probes on the charts -----------------------------------------------------------------

    def on_probe_panel_started(self, message: ProbePanel.Started) -> None:
        """Mark a probe's start on the charts of the device it measures."""
        self._mark("probe start", message.target.device)

    def _mark(self, label: str, device: str | None) -> None:
        import time

        main = self._main
        main.history.mark(Mark(time.monotonic(), label, device))
        main.draw_charts(force=True)
