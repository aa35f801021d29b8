"""The side panel's deferred tabs, and what their panels ask of the frames.

The Device tab's panel comes with the side panel
(:class:`~iotop_plus.tui.widgets.side_panel.SidePanel`, mounted by :mod:`.later_parts`). The
Tune, Processes, Cgroups, Blocked, Files, Probe and Sync tabs have no widget at first
(:data:`DEFERRED_TABS`): :meth:`SidePanels.panel` builds a tab's panel, and imports its module,
the first time something needs it, and :meth:`SidePanels.ready` mounts it when its tab is
first shown or a key needs it; it then learns the selection and reads the shown frame like
every other view. The Probe panel alone is ~44 widgets, and styling every hidden widget held
back the first frame. A new tab is a :class:`~iotop_plus.tui.widgets.tab_bar.BarTab` in
``SIDE_TABS``, its id in ``DEFERRED_TABS`` and a case in :meth:`SidePanels._build`.

Everything a panel needs is passed in here: the tuner, the probe runner factory, the refusals
(a replay, ``--read-only``) and a :class:`PanelFeed`, through which the panels ask what the
next frames carry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual.widget import AwaitMount, Widget

from iotop_plus.roots import Roots
from iotop_plus.tui.frame_feed import FrameFeed
from iotop_plus.tui.screens.refusals import REFUSED_TABS, Refusals
from iotop_plus.tui.scrub import Scrubber

if TYPE_CHECKING:
    from iotop_plus.devices.settings import SettingValue
    from iotop_plus.devices.tuner import Tuner
    from iotop_plus.probe.runner import ProbeRunner
    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.process_panel import ProcessPanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel
    from iotop_plus.tui.widgets.side_panel import SidePanel

DEFERRED_TABS = (
    "tab-tune",
    "tab-processes",
    "tab-cgroups",
    "tab-blocked",
    "tab-files",
    "tab-probe",
    "tab-sync",
)
"""Side-panel tabs whose panel is built and mounted on first use."""


class PanelFeed:
    """What the next frames carry, as the Processes and Cgroups panels ask for it.

    Args:
        feed: The sampler thread's frames.
        scrubber: Whether a frame of the history or a replay is on screen.
        show_again: Shows the frame on screen again (with what it now carries).
    """

    def __init__(
        self, feed: FrameFeed, scrubber: Scrubber, show_again: Callable[[], object]
    ) -> None:
        self.feed = feed
        self.scrubber = scrubber
        self.show_again = show_again

    def want_processes(self, on: bool) -> None:
        """A view shows processes (or no longer does); the next frames carry them or not.

        In replay or history no next frame comes until a scrub: the frame on screen shows its
        (recorded) processes at once."""
        self.feed.want_processes(on)
        if on and (self.scrubber.replay or self.scrubber.scrubbed):
            self.show_again()

    def want_cgroups(self, on: bool) -> None:
        """The Cgroups tab is shown (or no longer); the next frames carry cgroups or not.

        In replay or history the frame on screen shows its (recorded) cgroups at once, or
        that they were not recorded."""
        self.feed.want_cgroups(on)
        if on and (self.scrubber.replay or self.scrubber.scrubbed):
            self.show_again()

    def want_issuers(self, on: bool) -> None:
        """The Processes tab's "this device only" is on (or off): frames carry issuers or
        not; in replay or history the frame on screen shows its recorded ones at once."""
        self.feed.want_issuers(on)
        if on and (self.scrubber.replay or self.scrubber.scrubbed):
            self.show_again()

    def want_part(self, key: str, on: bool) -> None:
        """A view shows frame part ``key`` (or no longer): the next frames carry it or not;
        in replay or history the frame on screen shows its recorded value at once."""
        self.feed.want_part(key, on)
        if on and (self.scrubber.replay or self.scrubber.scrubbed):
            self.show_again()

    def want_files(self, on: bool) -> str | None:
        """The Files tab is shown (or no longer): the next frames carry files or not; in
        replay or history the frame on screen shows its recorded files at once. Returns why
        not, when the source reads no files."""
        refused = self.feed.want_files(on)
        if on and refused is None and (self.scrubber.replay or self.scrubber.scrubbed):
            self.show_again()
        return refused

    def set_detail_cgroup(self, path: str | None) -> None:
        """Frames list the processes of cgroup ``path``."""
        self.feed.set_detail_cgroup(path)

    def set_detail_pid(self, pid: int | None) -> None:
        """Frames carry threads and open files of ``pid``; the next one comes at once."""
        self.feed.set_detail_pid(pid)


class SidePanels:
    """The deferred tabs' panels: built on first use, mounted once.

    Args:
        roots: Where the panels read /proc and /sys.
        tuner: Applies, journals and undoes queue-setting changes (Tune, Processes).
        runner_factory: Makes the fio runner for a probe.
        feed: What the Processes and Cgroups panels ask of the frames.
        refusals: What a replay and read-only refuse.
        side: The side panel to mount the panels into (None until it is up).
        mounted: Called with a panel just mounted (it learns the selection and the frame).
    """

    def __init__(
        self,
        roots: Roots,
        tuner: Callable[[], Tuner],
        runner_factory: Callable[[], ProbeRunner],
        feed: PanelFeed,
        refusals: Refusals,
        side: Callable[[], SidePanel | None],
        mounted: Callable[[Widget], object],
    ) -> None:
        self.roots = roots
        self._tuner = tuner
        self.runner_factory = runner_factory
        self.feed = feed
        self.refusals = refusals
        self._side = side
        self._mounted = mounted
        self.built: dict[str, Widget] = {}
        """The panels built so far, by tab id."""
        self._mounting: dict[str, AwaitMount] = {}

    @property
    def tuner(self) -> Tuner:
        """Applies, journals and undoes queue-setting changes (made when first asked for)."""
        return self._tuner()

    def panel(self, tab_id: str) -> Widget:
        """The panel of side-panel tab ``tab_id``, built (its module imported) on first use."""
        built = self.built.get(tab_id)
        if built is None:
            built = self.built[tab_id] = self._build(tab_id)
        return built

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

    async def ready(self, tab_id: str) -> bool:
        """Mount ``tab_id``'s deferred panel if need be; False if it is not (app quitting)."""
        if tab_id not in DEFERRED_TABS:
            return True
        side = self._side()
        if side is not None and await self.mount(tab_id, side):
            self._mounted(self.panel(tab_id))
        return self.mounted(tab_id) is not None

    def mounted(self, tab_id: str) -> Widget | None:
        """The panel of ``tab_id`` if it is built and mounted (never builds it)."""
        built = self.built.get(tab_id)
        return built if built is not None and built.is_mounted else None

    async def mount(self, tab_id: str, side: SidePanel) -> bool:
        """Mount the panel of ``tab_id`` in the side panel and wait for it; True for the one
        call that mounted it (which tells it the selection), False when it already was or
        cannot be.

        A tab's activation travels through Textual's queues (the side panel, the screen) and
        can arrive after a quit began; then the side panel is no longer attached to the app,
        there is nothing to mount into, and the panel stays unmounted.
        """
        panel = self.panel(tab_id)
        if panel.is_mounted or not side.is_attached:
            return False
        if tab_id not in self._mounting:
            self._mounting[tab_id] = side.add_panel(tab_id, panel)
        await self._mounting[tab_id]
        return self._mounting.pop(tab_id, None) is not None

    def _build(self, tab_id: str) -> Widget:
        # Imported here: with their probe, process and tuning modules they cost ~80 ms of
        # start-up, before the first frame, for tabs that may never be opened.
        refusal = self.refusals.reason
        if tab_id in REFUSED_TABS and refusal is not None:
            from textual.widgets import Static

            return Static(refusal, id=f"{tab_id}-refused", markup=False)
        if tab_id == "tab-tune":
            from iotop_plus.tui.widgets.settings_panel import SettingsPanel

            return SettingsPanel(self.tuner, self.roots, id="settings-panel")
        if tab_id == "tab-processes":
            from iotop_plus.tui.widgets.process_panel import ProcessPanel

            return ProcessPanel(
                self.roots,
                self.feed,
                id="process-panel",
                refuse=self.refusals.refused,
                tuner=self.tuner,
            )
        if tab_id == "tab-cgroups":
            from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel

            return CgroupPanel(self.feed, id="cgroup-panel")
        if tab_id == "tab-blocked":
            from iotop_plus.tui.widgets.blocked_panel import BlockedPanel

            return BlockedPanel(self.feed, id="blocked-panel")
        if tab_id == "tab-files":
            from iotop_plus.tui.widgets.files_panel import FilesPanel

            return FilesPanel(self.feed, id="files-panel")
        if tab_id == "tab-probe":
            from iotop_plus.tui.widgets.probe_panel import ProbePanel

            state = self.tuner.journal.state  # None in tests: the history stays in memory
            return ProbePanel(self.runner_factory, self.roots, id="probe-panel", state=state)
        if tab_id == "tab-sync":
            from iotop_plus.tui.widgets.sync_panel import SyncPanel

            return SyncPanel(self.feed, id="sync-panel")
        raise KeyError(tab_id)


def tell_panel(
    panel: Widget, name: str | None, settings: tuple[SettingValue, ...] | None, mounting: bool
) -> None:
    """Tell a side panel the selected device: ``show_settings(name, settings)`` if it shows
    queue settings (the one read per selection), else ``set_device(name)`` if it has one."""
    show_settings = getattr(panel, "show_settings", None)
    setter = getattr(panel, "set_device", None)
    # A settings panel mounted before the first read reads for itself, once.
    if callable(show_settings) and not (mounting and settings is None):
        show_settings(name, settings)
    elif callable(setter):
        setter(name)


def default_runner_factory(roots: Roots) -> Callable[[], ProbeRunner]:
    """Makes the fio runner for a probe or an experiment (imported only when one runs)."""

    def make() -> ProbeRunner:
        from iotop_plus.probe.runner import ProbeRunner

        return ProbeRunner(roots)

    return make
