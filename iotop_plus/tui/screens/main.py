"""The one coordinating screen: header, device table, charts and the side panel (wide
terminals show them together, narrow ones one at a time: :mod:`.main_views`).

The feed hands each frame to :meth:`MainScreen.frame_arrived`; the screen's one reactive for
what is on screen, ``shown`` (:class:`~iotop_plus.tui.shown.Shown`: the frame, its mode, its
position), follows live, or the scrubber and ``space`` set it. Every widget that shows the
frame reads it (:class:`~iotop_plus.tui.shown.ShownViews`). ``selected_device`` is handed to
:class:`~.main_selection.Selection`; the keys are run by collaborators whose ``action_*``
methods the screen takes as its own (Textual looks actions up on the screen). The whole flow
is in docs/ARCHITECTURE.md, "The TUI's data flow".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input

from iotop_plus.config import Config
from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import clamp_interval
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.model import Frame, FrameSource
from iotop_plus.sampling.store.timeline import Mark, Timeline
from iotop_plus.tui.engine import compositor
from iotop_plus.tui.engine.first_resume import StyledAsMounted
from iotop_plus.tui.frame_feed import FrameFeed
from iotop_plus.tui.keys import PANEL_KEYS, PANEL_PALETTE, bindings, palette_entries
from iotop_plus.tui.messages import DeviceSelected
from iotop_plus.tui.replay_reads import ReplayRead
from iotop_plus.tui.screens.later_parts import LaterParts
from iotop_plus.tui.screens.main_actions import ScreenKeys, take_actions
from iotop_plus.tui.screens.main_charts import ChartWindow
from iotop_plus.tui.screens.main_history import HistoryKeys
from iotop_plus.tui.screens.main_keys import MAIN_KEYS
from iotop_plus.tui.screens.main_panels import PanelKeys
from iotop_plus.tui.screens.main_selection import Selection
from iotop_plus.tui.screens.main_table import TableKeys
from iotop_plus.tui.screens.main_views import ScreenViews, first_widgets
from iotop_plus.tui.screens.refusals import Refusals
from iotop_plus.tui.screens.side_panels import PanelFeed, SidePanels
from iotop_plus.tui.screens.side_panels import default_runner_factory as runners
from iotop_plus.tui.scrub import Scrubber
from iotop_plus.tui.shown import LIVE, REPLAY, Shown, ShownViews
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.tui.widgets.header import HostHeader
from iotop_plus.tui.widgets.side_panel import SidePanel
from iotop_plus.tui.widgets.tab_bar import TabBar
from iotop_plus.tui.widgets.table_columns import LATENCY_SET

if TYPE_CHECKING:
    from datetime import tzinfo

    from iotop_plus.devices.tuner import Tuner
    from iotop_plus.probe.runner import ProbeRunner
    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel


class MainScreen(StyledAsMounted, Screen[None]):
    """Coordinates the widgets: frames come from the feed, selections go up as messages."""

    KEYS = (*PANEL_KEYS, *MAIN_KEYS)
    """Every key of the screen (the shown tab's first, for the footer); the bindings, the
    palette and the help are made from these."""

    BINDINGS = bindings(KEYS)

    selected_device: reactive[str | None] = reactive(None, init=False, repaint=False)
    """Kernel name of the device the charts and panels are about."""
    interval: reactive[float] = reactive(1.0, init=False, repaint=False)
    """Seconds between frames: the one clock of every view (``+``/``-`` change it)."""
    shown: reactive[Shown] = reactive(Shown(), init=False, repaint=False, always_update=True)
    """The frame on screen, its mode (live, paused, history, replay) and its position."""

    def __init__(
        self,
        roots: Roots,
        config: Config,
        host: HostInfo,
        interval: float,
        tuner: Callable[[], Tuner],
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
        self.set_reactive(MainScreen.shown, Shown(mode=REPLAY if replay else LIVE))
        self.devices = tuple(devices)
        """Devices named on the command line (the table shows only those, the first selected)."""
        self.config = config
        self.host = host
        self.store = ring
        """The live frames, with each device's chart figures and the charts' marks."""
        self.feed = FrameFeed(source, self, ring)
        """The sampler thread's frames: counted, recorded, shown here when following live."""
        timeline = ring if timeline is None else timeline
        self.scrubber = Scrubber(self, timeline, replay=replay, zone=zone)
        """The shown frame's position when it is not the live one: ``[ ] { } g l``."""
        self.views = ShownViews(lambda: self.shown)
        """The widgets that show the frame on screen, told of each."""
        self.charts = ChartWindow(config.history_points, self.scrubber, self)
        """What window the charts draw, and when."""
        warn = partial(self.notify, severity="warning", timeout=5, markup=False)
        self.refusals = Refusals(replay=replay, read_only=config.read_only, say=warn)
        """What a replay and read-only refuse."""
        self.selection = Selection(
            self, self, roots, host.is_root, self.feed, timeline, self.refusals
        )
        """What follows the selected device: the panels, its settings, its verdict."""
        feed = PanelFeed(self.feed, self.scrubber, lambda: self.call_later(self.views.again))
        factory = runner_factory or runners(roots)
        self.later = LaterParts(self)
        """The charts and the side panel, mounted after the first paint."""
        self.panels = SidePanels(
            roots, tuner, factory, feed, self.refusals, self.later.side, self._panel_mounted
        )
        """The deferred side-panel tabs' panels."""
        self.layout_views = ScreenViews(self)
        """The views shown for the screen's size (narrow: one at a time)."""
        self.history = HistoryKeys(self.scrubber, self, config)
        """The history keys (``[ ] { } g l m M w``)."""
        self.table_keys = TableKeys(self, self.feed.want_latency)
        """The table's keys (``/`` Esc ``a`` ``c`` ``<`` ``>`` ``r``) and the device keys act on."""
        self.panel_keys = PanelKeys(self, self.panels, self.table_keys, self.later.ready)
        """The side-panel tabs' keys from anywhere, and ``R`` ``S`` ``u`` ``U`` ``X``."""
        keys = (ScreenKeys(self, self.scrubber), self.history, self.table_keys, self.panel_keys)
        take_actions(self, keys)  # Textual looks actions up on the screen
        self.views.follow(self.selection.show_shown)
        self.views.follow(self.charts.show_shown)

    @property
    def shown_frame(self) -> Frame | None:
        """The frame on screen."""
        return self.shown.frame

    def validate_interval(self, seconds: float) -> float:
        return clamp_interval(seconds)

    def watch_interval(self, seconds: float) -> None:
        self.feed.set_interval(seconds)
        if self.is_mounted:
            self.query_one(HostHeader).show(interval=seconds)

    def watch_shown(self, before: Shown, shown: Shown) -> None:
        if (before.mode, before.at) != (shown.mode, shown.at):
            self.refresh_bindings()  # "l Live" shows only away from live
        self.views.publish(shown)

    def compose(self) -> ComposeResult:
        # The screen's classes before its children mount: set after, each restyles them all.
        self.add_class("view-table")
        self.layout_views.fit(self.app.size.width, self.app.size.height)
        views = self.layout_views  # the view tabs only while narrow
        bar = views.new_bar() if views.narrow else None
        yield from first_widgets(
            self.host, self.config, self.interval, self.scrubber.zone, self.devices, bar
        )

    def on_mount(self) -> None:
        self.layout_views.fit(self.size.width, self.size.height)  # set in compose: no restyle
        self.views.follow_tree(self)
        table = self.query_one(DeviceTable)
        table.focus()
        if table.column_set == LATENCY_SET:  # column_set = "latency" in the config
            self.table_keys.show_latency_view(True)
        self.feed.release()  # the frames read while composing: shown before the first paint
        self.call_after_refresh(self.later.after_first_paint)

    def on_resize(self, event: object) -> None:
        size = getattr(event, "size", self.size)
        self.layout_views.fit(size.width, size.height)
        self.layout_views.place_bar()

    # ---- the shown frame -----------------------------------------------------------------

    def frame_arrived(self, frame: Frame) -> None:
        """A frame from the feed (recorded already): shown when the screen follows live."""
        if self.shown.mode == LIVE and self.is_attached:
            self.shown = Shown(frame, LIVE)

    def go_live(self) -> None:
        """Show the newest frame, and each one after it."""
        self.shown = Shown(self.feed.latest_frame or self.shown.frame, LIVE)

    def show_problem(self, text: str) -> None:
        """Show a one-line problem (a failed tick) in the header for a few seconds."""
        self.query_one(HostHeader).show_problem(text)

    def parts_mounted(self) -> None:
        """The charts and the side panel are up: they show the selection and the frame."""
        self.feed.verdict_shown()
        self.selection.tell(self.selected_device)
        self.selection.ask_verdict(self.shown)
        self.views.follow_tree(self)
        self.charts.draw(force=False)

    def on_replay_read(self, message: ReplayRead) -> None:
        """A lookup (a replay's frame, a verdict) came back from its worker: show it."""
        message.apply()

    # ---- selection -----------------------------------------------------------------------

    @on(DeviceSelected)
    def on_device_table_selected(self, message: DeviceSelected) -> None:
        if message.name == self.query_one(DeviceTable).selected:  # else a newer one is queued
            self.select_device(message.name)

    def on_device_table_hidden_changed(self, _message: DeviceTable.HiddenChanged) -> None:
        t = self.query_one(DeviceTable)  # the header names a busy device it hides
        self.query_one(HostHeader).show(hidden=(t.hidden, t.busy_hidden, t.hidden_why))

    def select_device(self, name: str | None) -> None:
        """Make ``name`` the device the charts and panels are about."""
        self.selected_device = name

    def watch_selected_device(self, name: str | None) -> None:
        if self.is_mounted:
            self.selection.changed(name)

    # ---- the deferred side-panel tabs -----------------------------------------------------

    def _panel_mounted(self, panel: Widget) -> None:
        self.selection.tell_mounted(panel)  # a side panel just mounted: the selection, the frame
        self.views.follow_tree(panel)

    @on(SidePanel.TabShown)
    async def on_side_tab(self, event: SidePanel.TabShown) -> None:
        self.refresh_bindings()  # the footer lists the shown tab's keys
        await self.panels.ready(event.tab_id)

    def on_process_panel_shown_changed(self, message: ProcessPanel.ShownChanged) -> None:
        self.set_class(message.shown, "processes-shown")  # the panel takes half the width

    def on_probe_panel_started(self, message: ProbePanel.Started) -> None:
        """Mark a probe's start on the charts of the device it measures."""
        self.store.mark(Mark(time.time(), "probe start", message.target.device))
        self.charts.draw(force=True)

    def on_settings_panel_changed(self, _message: SettingsPanel.Changed) -> None:
        """A setting changed: its mark comes with the next frame (the journal part reads the
        change's journal line); the Device tab shows the effective value now."""
        self.charts.draw(force=True)
        self.selection.read_settings()

    def on_settings_panel_failed(self, message: SettingsPanel.Failed) -> None:
        self.notify(message.text, severity="error", timeout=6, markup=False)

    def action_view(self, view: str) -> None:
        """In narrow mode, show one of: the table, the charts, the side panel."""
        self.layout_views.show(view)
        self.call_after_refresh(self.charts.draw, True)

    @on(TabBar.Picked, "#view-tabs")
    def on_view_tab(self, event: TabBar.Picked) -> None:
        if not self.has_class(event.tab_id):
            self.action_view(event.tab_id)

    @on(Input.Changed, "#filter")
    def on_filter_changed(self, event: Input.Changed) -> None:
        # The box's text now, not the event's: in a burst the Changed of "l", "lo"... arrive
        # after Enter has applied "loop2", and must not put an older text back.
        self.query_one(DeviceTable).set_filter(event.input.value)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "/" is text in a focused text box (the filter itself, a probe's target path).
        if action == "filter" and isinstance(self.focused, Input):
            return False
        if action.startswith("panel_"):
            if not self.later.mounted:  # panel keys wait for it; a tab is shown once it is up
                return action == "panel_tab"
            return self.panel_keys.check(action, parameters)
        return self.history.check(action)

    def commands(self) -> Iterable[tuple[str, str, str]]:
        """(title, help, action) of every screen action, for the command palette."""
        return palette_entries((*self.KEYS, *PANEL_PALETTE))
