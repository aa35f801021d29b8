"""What follows the selected device on the main screen: the panels, its settings, its verdict.

The main screen's ``selected_device`` (a reactive: the table's cursor, a test or a command set
it) is handed to :class:`Selection`, a collaborator the screen owns:

* every mounted widget that shows the selected device is told at once: ``show_settings(name,
  values)`` if it shows queue settings (the one read per selection; None until it is done),
  else ``set_device(name)`` (:func:`~iotop_plus.tui.screens.side_panels.tell_panel`);
* queue settings are read from sysfs once per selection, in a worker, after the cursor has
  rested (a held-down arrow key reads nothing per row), and again only when a setting is
  changed or the devices change; the Device and Tune tabs both show that one read. Not in a
  replay: this host's settings now are not the recorded device's;
* the sampler thread judges the selected device's verdict in the next frames; the frame on
  screen, when it lacks it (scrubbed back, replayed, just selected), is judged on a worker
  thread (:meth:`~iotop_plus.tui.frame_feed.FrameFeed.ask_verdict`) and, once judged, the
  frame on screen carries it, so the Device tab reads it from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual.widget import Widget

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.frame_feed import FrameFeed
from iotop_plus.tui.screens.main_charts import ChartWindow
from iotop_plus.tui.screens.refusals import Refusals
from iotop_plus.tui.screens.side_panels import tell_panel
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.device_table import DeviceTable
from iotop_plus.why.verdicts import has_verdict, with_verdicts

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.timer import Timer

    from iotop_plus.devices.settings import SettingValue
    from iotop_plus.sampling.store.timeline import Timeline

CHART_SETTLE_S = 0.15
"""The charts and the settings follow a new selection after the cursor has rested this long."""


class SelectionView(Protocol):
    """What the selection needs of the main screen's own state."""

    selected_device: str | None
    shown: Shown

    @property
    def charts(self) -> ChartWindow: ...


class Selection:
    """The selected device's settings read, the widgets that show it, and its verdict.

    Args:
        view: The main screen's selection, shown frame and charts.
        screen: The main screen as Textual's: its widgets, timers and workers.
        roots: Where the settings are read.
        is_root: Whether the settings can be read as root.
        feed: Judges the verdicts off the UI thread.
        timeline: Where the frames before a scrubbed or replayed one are.
        refusals: What a replay refuses (reading this host's settings).
    """

    def __init__(
        self,
        view: SelectionView,
        screen: Screen[Any],
        roots: Roots,
        is_root: bool,
        feed: FrameFeed,
        timeline: Timeline,
        refusals: Refusals,
    ) -> None:
        self.view = view
        self.screen = screen
        self.roots = roots
        self.is_root = is_root
        self.feed = feed
        self.timeline = timeline
        self.refusals = refusals
        self.settings: tuple[str, tuple[SettingValue, ...]] | None = None
        """The last queue settings read: (device, values); read once per selection."""
        self.reads = 0
        """Queue-settings reads started (each is several sysfs files)."""
        self._timer: Timer | None = None
        self._inventory: object = None

    def changed(self, name: str | None) -> None:
        """``name`` is selected now: the cursor follows, the widgets that show it are told,
        the charts and the settings follow once the cursor rests."""
        table = self.screen.query_one(DeviceTable)
        if name is not None and table.selected != name:
            table.select_name(name)  # set from elsewhere (a test, a command): the cursor follows
        self.feed.judge_devices = frozenset(() if name is None else (name,))
        self.tell(name)
        self.ask_verdict(self.view.shown)
        # Drawing five plots takes tens of ms, and reading the settings several sysfs files:
        # while a key is held down, do both once it stops.
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.screen.set_timer(CHART_SETTLE_S, self._settled)

    def _settled(self) -> None:
        self._timer = None
        self.view.charts.draw(force=False)
        self.read_settings()

    def tell(self, name: str | None) -> None:
        """Tell every mounted widget that shows the selected device about ``name`` (with the
        one read of its settings, None until it is done)."""
        settings = self.settings_of(name)
        for node in self.screen.walk_children(Widget):
            if node.is_mounted:
                tell_panel(node, name, settings, mounting=False)

    def tell_mounted(self, panel: Widget) -> None:
        """A side panel was just mounted: it learns the selection (a settings panel mounted
        before the first read reads for itself, once)."""
        name = self.view.selected_device
        tell_panel(panel, name, self.settings_of(name), mounting=True)

    def settings_of(self, name: str | None) -> tuple[SettingValue, ...] | None:
        """The settings read for ``name``, if the last read was its."""
        if self.settings is not None and self.settings[0] == name:
            return self.settings[1]
        return None

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: a device came or went (the selected one may be new:
        its settings are read again); its verdict is judged if the frame lacks it."""
        frame = shown.frame
        if frame is not None:
            before, self._inventory = self._inventory, frame.inventory
            moved = before is not None and frame.inventory is not before  # a scrub skipped it
            if (frame.inventory_changed or moved) and self._timer is None:
                self.read_settings()
        self.ask_verdict(shown)

    def ask_verdict(self, shown: Shown) -> None:
        """Have the selected device judged in the frame on screen, if it lacks its verdict
        (else the feed is asked for it)."""
        frame, name = shown.frame, self.view.selected_device
        if frame is not None and name is not None and not has_verdict(name, frame):
            self.feed.ask_verdict(frame, name, self.timeline, self._judged)

    def _judged(self, frame: Frame) -> None:
        """A frame's verdict came from the worker: the frame on screen carries it, if it is
        still that frame."""
        shown = self.view.shown
        on_screen = shown.frame
        same = on_screen is not None and (on_screen.seq, on_screen.wall_time) == (
            frame.seq,
            frame.wall_time,
        )
        if on_screen is not None and same and frame.verdicts:
            self.view.shown = Shown(with_verdicts(on_screen, frame.verdicts), shown.mode, shown.at)

    def read_settings(self) -> None:
        """Read the selected device's queue settings (in a worker) for the Device and Tune tabs.

        Not in a replay: this host's settings now are not the recorded device's.
        """
        name = self.view.selected_device
        if name is not None and self.refusals.replay_reason is None:
            self.reads += 1
            self.screen.run_worker(
                lambda: self._read(name),
                thread=True,
                exclusive=True,
                group="settings",
                exit_on_error=False,
            )

    def _read(self, name: str) -> None:
        # Several small sysfs reads: off the UI thread, then shown from the UI thread.
        from iotop_plus.devices.settings import read_settings

        settings = read_settings(self.roots, name, is_root=self.is_root)
        self.screen.app.call_from_thread(self._read_done, name, settings)

    def _read_done(self, name: str, settings: tuple[SettingValue, ...]) -> None:
        if not self.screen.app.is_running or name != self.view.selected_device:
            return  # read just before shutdown, or the cursor has moved on since
        self.settings = (name, settings)
        for node in self.screen.walk_children(Widget):
            if node.is_mounted and callable(getattr(node, "show_settings", None)):
                tell_panel(node, name, settings, mounting=False)
