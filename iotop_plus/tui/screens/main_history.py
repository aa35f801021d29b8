"""The main screen's history keys (``[ ] { } g l``), its replay refusals and its probe marks.

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

REPLAY_REFUSAL = "replay: tuning and probes are off (these are recorded frames, not this host now)"
"""The one line said when a key would tune or probe during a replay."""

READ_ONLY_REFUSAL = "read-only: no tuning, probes or experiments (started with --read-only)"
"""The one line said when a key would tune, probe or experiment under ``--read-only``."""

TUNING_ACTIONS = frozenset({"tune", "undo_setting", "revert_settings", "experiment"})
"""Main-screen actions a replay and read-only refuse."""

SYSTEM_ACTIONS = frozenset({"tab-processes:toggle_delayacct"})
"""Panel actions that change the system (a sysctl): read-only refuses them; in a replay they
act on this host, as they say."""

REFUSED_TABS = frozenset({"tab-tune", "tab-probe"})
"""Side-panel tabs a replay and read-only show only the refusal on."""


class HistoryActions:
    """The history keys of the main screen (mixed into it)."""

    @property
    def _main(self) -> MainScreen:
        return cast("MainScreen", self)

    @property
    def replay_reason(self) -> str | None:
        """Why tuning and probes are off (a replay), or None."""
        return REPLAY_REFUSAL if self._main.scrubber.replay else None

    @property
    def refusal_reason(self) -> str | None:
        """Why tuning, probes and experiments are off (a replay, ``--read-only``), or None."""
        if self.replay_reason is not None:
            return self.replay_reason
        return READ_ONLY_REFUSAL if getattr(self._main.config, "read_only", False) else None

    def refused(self, action: str) -> bool:
        """Whether ``action`` is refused (a replay, read-only); says why in one line if so.

        ``action`` is a screen action or ``tab:action`` for a side-panel tab's command.
        """
        reason = self.refusal_reason
        if reason is None:
            return False
        tab = action.split(":", 1)[0] if ":" in action else None
        system = action in SYSTEM_ACTIONS and self.replay_reason is None
        if action not in TUNING_ACTIONS and tab not in REFUSED_TABS and not system:
            return False
        self._main.notify(reason, severity="warning", timeout=5, markup=False)
        return True

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
        main._draw_charts(main._now(), force=True)
