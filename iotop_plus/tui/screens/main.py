"""The one coordinating screen: header, device table, charts and the side panel.

Wide terminals show the table over the charts, with the side panel on the right. Narrow ones
(80x24 over SSH) show one of them at a time (:mod:`iotop_plus.tui.screens.main_views`).

How the side panel works:

* The Tune, Processes, Cgroups and Probe tabs start empty; their panels are built and mounted
  on first use (:mod:`iotop_plus.tui.screens.side_panels`, which passes each what it needs).
* A tab's widget that has ``set_device(name)`` is told about every selection
  (:meth:`MainScreen.notify_panels`); the table also posts :class:`DeviceSelected`, which
  bubbles through this screen to the app. ``MainScreen.selected_device``, a reactive, holds
  the current one: setting it (the table's cursor, a test, a command) updates every view.
* The state every view follows lives here, as reactives: ``interval`` (``+``/``-``),
  ``paused`` (``space``) and ``scrub_at`` (the frame shown in history). The screen owns the
  :class:`~iotop_plus.tui.frame_feed.FrameFeed` (the sampler thread's frames) and the
  :class:`~iotop_plus.tui.scrub.Scrubber`; the Processes and Cgroups panels ask the feed, not
  the app, for what the frames carry.
* Queue settings are read from sysfs once per selection, in a worker, after the cursor has
  rested (a held-down arrow key reads nothing per row), and again only when a setting is
  changed or the devices change; the Device and Tune tabs both show that one read.
* Each setting change the Tune panel reports (:class:`SettingsPanel.Changed`) becomes a chart
  mark at the change's monotonic time, the clock the frames' samples carry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input

from iotop_plus.config import Config
from iotop_plus.devices.settings import SettingValue, read_settings
from iotop_plus.devices.tuner import Tuner
from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import clamp_interval
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.model import Frame, FrameSource
from iotop_plus.sampling.store.timeline import Mark, Timeline
from iotop_plus.tui.engine import compositor
from iotop_plus.tui.engine.first_resume import StyledAsMounted
from iotop_plus.tui.frame_feed import FrameFeed
from iotop_plus.tui.keys import bindings, palette_entries
from iotop_plus.tui.messages import DeviceSelected
from iotop_plus.tui.screens.early_frames import EarlyFrames
from iotop_plus.tui.screens.later_parts import LaterParts
from iotop_plus.tui.screens.main_charts import ChartWindow
from iotop_plus.tui.screens.main_history import HistoryActions
from iotop_plus.tui.screens.main_keys import MAIN_KEYS, step_interval
from iotop_plus.tui.screens.main_panels import PANEL_KEYS, PANEL_PALETTE, PanelKeys
from iotop_plus.tui.screens.main_table import TableKeys
from iotop_plus.tui.screens.main_views import ScreenViews
from iotop_plus.tui.screens.refusals import Refusals
from iotop_plus.tui.screens.side_panels import (
    DEFERRED_TABS,
    PanelFeed,
    SidePanels,
    default_runner_factory,
    tell_panel,
)
from iotop_plus.tui.scrub import Scrubber
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.key_hints import KeyHints
from iotop_plus.tui.widgets.pressure import PressureGauge
from iotop_plus.tui.widgets.side_panel import SidePanel
from iotop_plus.tui.widgets.tab_bar import TabBar
from iotop_plus.tui.widgets.table_columns import LATENCY_SET

if TYPE_CHECKING:
    from datetime import tzinfo

    from iotop_plus.probe.runner import ProbeRunner
    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel

CHART_SETTLE_S = 0.15
"""The charts and the settings follow a new selection after the cursor has rested this long."""

PROBLEM_SHOWN_S = 5.0
"""A sampling problem stays in the header at least this long, so it can be read."""


class MainScreen(HistoryActions, StyledAsMounted, Screen[None]):
    """Coordinates the widgets: frames come down from the app, selections go up as messages."""

    KEYS = (*PANEL_KEYS, *MAIN_KEYS)
    """Every key of the screen (the shown tab's first, for the footer); the bindings, the
    palette and the help are made from these."""

    BINDINGS = bindings(KEYS)

    selected_device: reactive[str | None] = reactive(None, init=False, repaint=False)
    """Kernel name of the device the charts and panels are about."""
    interval: reactive[float] = reactive(1.0, init=False, repaint=False)
    """Seconds between frames: the one clock of every view (``+``/``-`` change it)."""
    paused: reactive[bool] = reactive(False, init=False, repaint=False)
    """Display frozen (``space``); frames still feed the history."""
    scrub_at: reactive[float | None] = reactive(None, init=False, repaint=False)
    """Wall time of the frame shown in history; None when live or paused."""

    def __init__(
        self,
        roots: Roots,
        config: Config,
        host: HostInfo,
        interval: float,
        tuner: Tuner | None = None,
        runner_factory: Callable[[], ProbeRunner] | None = None,
        *,
        devices: Sequence[str] = (),
        source: FrameSource,
        ring: FrameStore,
        timeline: Timeline | None = None,
        replay: bool = False,
        zone: tzinfo | None = None,
    ) -> None:
        """``ring`` keeps the live frames (the frame store); ``timeline`` is where the history
        keys and the charts look (the store, the store after this host's recordings, or a
        recording when ``replay``), in the recorded host's ``zone``."""
        super().__init__()
        compositor.install(self)
        self.set_reactive(MainScreen.interval, clamp_interval(interval))
        self.roots = roots
        self.devices = tuple(devices)
        """Devices named on the command line (the table shows only those, the first selected)."""
        self.tuner = tuner if tuner is not None else Tuner(roots, None, is_root=host.is_root)
        """Applies, journals and undoes queue-setting changes."""
        self.runner_factory = runner_factory or default_runner_factory(roots)
        """Makes the fio runner for a probe or an experiment."""
        self.config = config
        self.host = host
        self.store = ring
        """The live frames, with each device's chart figures and the charts' marks."""
        self.feed = FrameFeed(source, self, ring)
        """The sampler thread's frames: counted, recorded, shown here unless paused."""
        self.scrubber = Scrubber(
            self, ring if timeline is None else timeline, replay=replay, zone=zone
        )
        """The frame on screen when it is not the live one: ``[ ] { } g l``."""
        self.charts = ChartWindow(config.history_points, self.scrubber)
        """What window the charts draw, and when."""
        self.shown_frame: Frame | None = None
        """The last frame shown (frozen while paused)."""
        self.frames_seen = 0
        """Ticks received, shown or not."""
        self.settings: tuple[str, tuple[SettingValue, ...]] | None = None
        """The last queue settings read: (device, values); read once per selection."""
        self.settings_reads = 0
        """Queue-settings reads started (each is several sysfs files)."""
        self._problem_at = float("-inf")
        self._chart_timer: Timer | None = None
        self._start_monotonic: float | None = None
        self.early = EarlyFrames()
        """Frames read while the screen composes, shown from on_mount (before the first paint)."""
        self.refusals = Refusals(replay=replay, read_only=config.read_only, say=self._warn)
        """What a replay and read-only refuse."""
        self.panels = SidePanels(
            roots,
            self.tuner,
            self.runner_factory,
            PanelFeed(self.feed, self.scrubber, self._show_again),
            self.refusals,
        )
        """The deferred side-panel tabs' panels."""
        self.views = ScreenViews(self)
        """The views shown for the screen's size (narrow: one at a time)."""
        self.table_keys = TableKeys(self, self.feed.want_latency)
        """The table's keys (``/`` Esc ``a`` ``c`` ``<`` ``>`` ``r``) and the device keys act on."""
        self.panel_keys = PanelKeys(self, self.panels, self.table_keys)
        """The side-panel tabs' keys from anywhere, and ``R`` ``S`` ``u`` ``U`` ``X``."""
        self.later = LaterParts(self)
        """The charts and the side panel, mounted after the first paint."""

    def validate_interval(self, seconds: float) -> float:
        return clamp_interval(seconds)

    def watch_interval(self, seconds: float) -> None:
        self.feed.set_interval(seconds)
        if self.is_mounted:
            self.show_interval(seconds)

    def watch_paused(self, paused: bool) -> None:
        if not self.is_mounted or self.scrubber.replay:
            return
        if not paused:
            self.scrub_at = None  # back to live: the newest frame, shown below
        frame = self.feed.latest_frame
        self.show_paused(paused)
        if not paused and frame is not None:
            self.show_frame(frame)

    # ---- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # The screen's classes before its children mount: set after, each restyles them all.
        self.add_class("view-table")
        self.views.fit(self.app.size.width, self.app.size.height)
        with Horizontal(id="header-row"):
            yield HostHeader(self.host, self.interval, id="header", read_only=self.config.read_only)
            yield PressureGauge(id="pressure")
        if self.narrow:
            yield self.views.new_bar()  # the view tabs, mounted only while narrow
        with Horizontal(id="body"), Vertical(id="left"):
            yield DeviceTable(self.config, only=self.devices, id="table")
            # The filter box and the latency view come when first shown (main_table); the
            # charts under the table and the side panel beside it just after the first paint
            # (later_parts).
        yield KeyHints()

    def on_mount(self) -> None:
        self.views.fit(self.size.width, self.size.height)  # set in compose: no change, no restyle
        table = self.query_one(DeviceTable)
        table.focus()
        if table.column_set == LATENCY_SET:  # column_set = "latency" in the config
            self.table_keys.show_latency_view(True)
        self.early.release(lambda frame: self.feed.take(frame, self.paused))
        self.call_after_refresh(self.later.after_first_paint)

    def on_resize(self, event: object) -> None:
        size = getattr(event, "size", self.size)
        self.views.fit(size.width, size.height)
        self.views.place_bar()

    @property
    def narrow(self) -> bool:
        """Whether one view at a time is shown."""
        return self.views.narrow

    @property
    def view(self) -> str:
        """The view shown in narrow mode."""
        return self.views.view

    # ---- frames from the app -------------------------------------------------------------

    def take_frame(self, frame: Frame) -> None:
        """A frame from the sampler thread: recorded, and shown unless paused."""
        self.feed.take(frame, self.paused)

    def start_replay(self, at: float | None) -> None:
        """A replay opens: times in the recorded host's zone, the frame at ``at`` shown."""
        self.query_one(HostHeader).zone = self.scrubber.zone
        self.scrubber.start(at)

    def count_frame(self, frame: Frame) -> None:
        """A frame arrived (shown or not)."""
        self.frames_seen += 1
        if self._start_monotonic is None:
            self._start_monotonic = frame.sample.monotonic

    def show_interval(self, seconds: float) -> None:
        """The interval changed: the header says so."""
        self.query_one(HostHeader).show(interval=seconds)

    def show_mode(self, mode: str, wall_time: float | None) -> None:
        """The header says LIVE, PAUSED at T, HISTORY at T or REPLAY at T."""
        self.query_one(HostHeader).show(mode=mode, wall_time=wall_time)
        self.refresh_bindings()  # "l Live" shows only away from live

    def action_jump(self) -> None:
        """Ask for a time and go there."""
        hint = self.scrubber.jump_hint()
        if hint is not None:
            from iotop_plus.tui.screens.jump import JumpScreen

            self.app.push_screen(JumpScreen(self.scrubber.jump, hint))

    def on_probe_panel_started(self, message: ProbePanel.Started) -> None:
        """Mark a probe's start on the charts of the device it measures."""
        self.store.mark(Mark(time.time(), "probe start", message.target.device))
        self.draw_charts(force=True)

    def show_paused(self, paused: bool) -> None:
        """Pause state changed: the header says so."""
        wall = self.shown_frame.wall_time if self.shown_frame else None
        self.show_mode("paused" if paused else "live", wall)

    def show_frame(self, frame: Frame) -> None:
        """Show a frame in every view: header, table, charts, device facts, processes."""
        # A scrub (or the way back to live) can skip the frame where the devices changed.
        shown = self.shown_frame
        new_devices = shown is not None and frame.inventory is not shown.inventory
        self.shown_frame = frame
        header = self.query_one(HostHeader)
        start = self._start_monotonic if self._start_monotonic is not None else frame.monotonic
        up = self.host.uptime_s  # one header update per frame
        uptime = None if up is None else up + frame.sample.monotonic - start
        header.show(wall_time=frame.wall_time, uptime_s=uptime)
        self.query_one(PressureGauge).show(frame.pressure, self.size.width)
        problems = frame.sample.problems
        if problems:
            first = problems[0]
            # The file's name, not its path: a captured tree's path would push the reason off
            # the line (the full path is in snapshot's warnings).
            where = first.source.rsplit("/", 1)[-1]
            header.show(note=f"{len(problems)} bad line(s) in {where}: {first.reason}")
        elif header.note and time.monotonic() - self._problem_at >= PROBLEM_SHOWN_S:
            header.show(note="")
        changed = frame.inventory_changed or new_devices
        table = self.query_one(DeviceTable)
        table.update_parts(frame)  # latency figures, health marks
        table.update_devices(
            frame.rates, frame.inventory, frame.ever_used, frame.nr_requests, changed
        )
        self.on_device_table_hidden_changed()
        latency_view = self.table_keys.latency_view
        if latency_view is not None and latency_view.display:
            latency_view.show_latency(frame.latency, self.selected_device)
        self._show_device_panel()  # its memory and verdict lines move with every frame
        if changed and self.selected_device is not None and self._chart_timer is None:
            self.read_settings()  # a device came or went: the selected one may be new
        self.draw_charts(force=False)
        if self.panels.mounted("tab-probe") is not None:
            probe = self.probe_panel
            if probe.probe_device is not None:
                probe.update_device_rates(frame.rates.get(probe.probe_device))
        self.show_who(frame)  # Processes, Cgroups: the frame's, or "not recorded" in history

    def _warn(self, line: str) -> None:
        self.notify(line, severity="warning", timeout=5, markup=False)

    def _show_again(self) -> None:
        """Show the frame on screen again (a panel now wants what it carries)."""
        shown = self.shown_frame if self.is_mounted else None
        if shown is not None:
            self.call_later(self.show_frame, shown)

    def show_problem(self, text: str) -> None:
        """Show a one-line problem (a failed tick) in the header for a few seconds."""
        self._problem_at = time.monotonic()
        self.query_one(HostHeader).show(note=text)

    def draw_charts(self, force: bool) -> None:
        """Draw the selected device's charts up to the frame shown."""
        charts = self.later.charts()
        if charts is None:
            return  # drawn with the frame shown once they are up
        self.charts.draw(charts, self.selected_device, self.interval, force)

    # ---- selection -----------------------------------------------------------------------

    @on(DeviceSelected)
    def on_device_table_selected(self, message: DeviceSelected) -> None:
        """The table's cursor moved: tell the panels (parents call methods down)."""
        if message.name != self.query_one(DeviceTable).selected:
            return  # the cursor has moved on (a held key): a newer message is queued
        self.select_device(message.name)

    def on_device_table_hidden_changed(self, _: object = None) -> None:
        """The header names a busy device the table hides (or no longer does)."""
        table = self.query_one(DeviceTable)
        self.query_one(HostHeader).show(hidden=(table.hidden, table.busy_hidden, table.hidden_why))

    def select_device(self, name: str | None) -> None:
        """Make ``name`` the device the charts and panels are about."""
        self.selected_device = name

    def watch_selected_device(self, name: str | None) -> None:
        if not self.is_mounted:
            return
        table = self.query_one(DeviceTable)
        if name is not None and table.selected != name:
            table.select_name(name)  # set from elsewhere (a test, a command): the cursor follows
        self._show_device_panel()
        # Drawing five plots takes tens of ms, and reading the settings several sysfs files:
        # while a key is held down, do both once it stops.
        if self._chart_timer is not None:
            self._chart_timer.stop()
        self._chart_timer = self.set_timer(CHART_SETTLE_S, self._selection_settled)
        self.notify_panels(name)

    def _selection_settled(self) -> None:
        self._chart_timer = None
        self.draw_charts(force=False)
        self.read_settings()

    def notify_panels(self, name: str | None) -> None:
        """Hook for the other side-panel tabs: each gets ``set_device(name)`` if it has one.

        A panel that shows queue settings (``show_settings(name, values)``) gets the values
        of the one read per selection instead (None until that read is done).
        """
        side = self.later.side()
        for panel in side.panels() if side is not None else ():
            if panel.is_mounted:
                tell_panel(panel, name, self._settings_of(name), mounting=False)

    def _settings_of(self, name: str | None) -> tuple[SettingValue, ...] | None:
        if self.settings is not None and self.settings[0] == name:
            return self.settings[1]
        return None

    # ---- the deferred side-panel tabs -----------------------------------------------------

    def panel(self, tab_id: str) -> Widget:
        """The panel of side-panel tab ``tab_id``, built (its module imported) on first use."""
        return self.panels.panel(tab_id)

    @property
    def settings_panel(self) -> SettingsPanel:
        """The Tune tab's panel (built, not necessarily mounted)."""
        return cast("SettingsPanel", self.panel("tab-tune"))

    @property
    def process_panel(self) -> ProcessPanel:
        """The Processes tab's panel (built, not necessarily mounted)."""
        return cast("ProcessPanel", self.panel("tab-processes"))

    @property
    def probe_panel(self) -> ProbePanel:
        """The Probe tab's panel (built, not necessarily mounted)."""
        return cast("ProbePanel", self.panel("tab-probe"))

    async def panel_ready(self, tab_id: str) -> bool:
        """Mount ``tab_id``'s deferred panel if need be; False if it is not (app quitting)."""
        if tab_id not in DEFERRED_TABS:
            return True
        side = self.later.side()
        if side is not None and await self.panels.mount(tab_id, side):
            name = self.selected_device
            tell_panel(self.panel(tab_id), name, self._settings_of(name), mounting=True)
        return self.panels.mounted(tab_id) is not None

    @on(SidePanel.TabShown)
    async def on_side_tab(self, event: SidePanel.TabShown) -> None:
        self.refresh_bindings()  # the footer lists the shown tab's keys
        await self.panel_ready(event.tab_id)

    def _show_device_panel(self) -> None:
        device_panel = self.later.device_panel()
        if device_panel is None:
            return
        inventory = self.shown_frame.inventory if self.shown_frame else None
        name = self.selected_device
        dev = inventory.get(name) if inventory and name else None
        device_panel.show(dev, self._settings_of(name), self.shown_frame)

    def read_settings(self) -> None:
        """Read the selected device's queue settings (in a worker) for the Device and Tune tabs.

        Not in a replay: this host's settings now are not the recorded device's.
        """
        if self.selected_device is not None and self.refusals.replay_reason is None:
            self.settings_reads += 1
            self._read_settings(self.selected_device)

    @work(thread=True, exclusive=True, group="settings", exit_on_error=False)
    def _read_settings(self, name: str) -> None:
        # Several small sysfs reads: off the UI thread, then shown from the UI thread.
        settings = read_settings(self.roots, name, is_root=self.host.is_root)
        self.app.call_from_thread(self._settings_read, name, settings)

    def _settings_read(self, name: str, settings: tuple[SettingValue, ...]) -> None:
        if not self.app.is_running or name != self.selected_device:
            return  # read just before shutdown, or the cursor has moved on since
        self.settings = (name, settings)
        self._show_device_panel()
        if self.panels.mounted("tab-tune") is not None and not self.refusals.reason:
            self.settings_panel.show_settings(name, settings)

    # ---- actions -------------------------------------------------------------------------

    def action_pause(self) -> None:
        """Freeze every view; sampling and history continue (in history: back to live)."""
        scrub = self.scrubber
        if scrub.scrubbed or scrub.replay:
            scrub.live()
        else:
            self.paused = not self.paused

    # ---- tuning, probes and experiments (the side-panel tabs) -----------------------------

    async def action_panel_tab(self, tab_id: str) -> None:
        """Show one side-panel tab (on narrow screens, the panel view too)."""
        await self.later.ready()
        self.panel_keys.show_tab(tab_id)

    def on_settings_panel_changed(self, _message: SettingsPanel.Changed) -> None:
        """A setting changed: its mark comes with the next frame (the journal part reads the
        change's journal line); the Device tab shows the effective value now."""
        self.draw_charts(force=True)
        self.read_settings()  # the Device tab shows the effective value

    def on_settings_panel_failed(self, message: SettingsPanel.Failed) -> None:
        self.notify(message.text, severity="error", timeout=6, markup=False)

    def action_faster(self) -> None:
        """Sample more often."""
        self.interval = step_interval(self.interval, -1)

    def action_slower(self) -> None:
        """Sample less often."""
        self.interval = step_interval(self.interval, 1)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "/" is text in a focused text box (the filter itself, a probe's target path).
        if action == "filter" and isinstance(self.focused, Input):
            return False
        if action.startswith("panel_"):
            if not self.later.mounted:  # panel keys wait for it; a tab is shown once it is up
                return action == "panel_tab"
            return self.panel_keys.check(action, parameters)
        return self.check_history_action(action)

    @on(Input.Changed, "#filter")
    def on_filter_changed(self, event: Input.Changed) -> None:
        # The box's text now, not the event's: in a burst the Changed of "l", "lo"... arrive
        # after Enter has applied "loop2", and must not put an older text back.
        self.query_one(DeviceTable).set_filter(event.input.value)

    def action_help(self) -> None:
        """Open the help screen."""
        from iotop_plus.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())

    def action_view(self, view: str) -> None:
        """In narrow mode, show one of: the table, the charts, the side panel."""
        self.views.show(view)
        self.call_after_refresh(self.draw_charts, True)

    @on(TabBar.Picked, "#view-tabs")
    def on_view_tab(self, event: TabBar.Picked) -> None:
        if not self.has_class(event.tab_id):
            self.action_view(event.tab_id)

    # ---- keys run by the collaborators (Textual looks an action up on the screen) ---------

    def action_filter(self) -> None:
        self.table_keys.open_filter()

    def action_clear_filter(self) -> None:
        self.table_keys.clear_filter()

    def finish_filter(self, value: str) -> None:
        self.table_keys.finish_filter(value)  # Enter in the filter box (FilterInput)

    def action_toggle_all(self) -> None:
        self.table_keys.toggle_all()

    def action_cycle_columns(self) -> None:
        self.table_keys.cycle_columns()

    def action_sort(self, step: int) -> None:
        self.table_keys.sort(step)

    def action_reverse_sort(self) -> None:
        self.table_keys.reverse_sort()

    async def action_panel_key(self, tab: str, action: str) -> None:
        await self.panel_keys.run(tab, action)

    async def action_panel_command(self, tab: str, action: str) -> None:
        await self.panel_keys.command(tab, action)

    async def action_tune(self, setting: str) -> None:
        await self.later.ready()
        await self.panel_keys.tune(setting)

    async def action_undo_setting(self) -> None:
        await self.later.ready()
        await self.panel_keys.undo_setting()

    async def action_revert_settings(self) -> None:
        await self.later.ready()
        await self.panel_keys.revert_settings()

    def action_experiment(self) -> None:
        self.panel_keys.experiment()

    def commands(self) -> Iterable[tuple[str, str, str]]:
        """(title, help, action) of every screen action, for the command palette."""
        return palette_entries((*self.KEYS, *PANEL_PALETTE))
