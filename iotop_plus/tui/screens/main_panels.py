"""The side-panel tabs' keys on the main screen: they work from anywhere while the tab shows.

A panel binds its own letter keys, which Textual runs only while the panel has focus, so
"press D" would fail from the device table. The screen binds the same keys too
(:func:`~iotop_plus.tui.keys.panel_key`), limited to while their tab is shown: from the
table, ``o`` runs the Processes panel's ``o`` when the Processes tab shows and the Cgroups
panel's ``o`` when that one shows. The footer lists them while their tab is shown. None of
them is a screen key (the clash test checks it). Enter and Esc stay with the focused list:
Enter starting a probe while the cursor is in the device table would start fio by surprise.

The palette lists every panel action (:data:`PANEL_PALETTE` adds those on Enter, Esc and the
arrows); choosing one shows its tab first. The screen's own keys that act through a panel
(``R`` ``S`` ``u`` ``U`` on the Tune panel, ``X`` with the Probe panel's history) are here too.

:class:`PanelKeys` runs them: a collaborator the main screen owns, given the screen as a
:class:`PanelView`, the side panels and the table's keys (the device a key acts on). The
screen keeps a one-line ``action_*`` for each, as Textual looks actions up on the screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from iotop_plus.tui.keys import Command, panel_key
from iotop_plus.tui.screens.main_table import TableKeys
from iotop_plus.tui.screens.side_panels import SidePanels
from iotop_plus.tui.widgets.side_panel import SidePanel

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel

TUNE = "tab-tune"
PROCESSES = "tab-processes"
CGROUPS = "tab-cgroups"
PROBE = "tab-probe"

W = TypeVar("W", bound="Widget")

PANEL_KEYS: tuple[Command, ...] = (
    panel_key(
        "A",
        TUNE,
        "toggle_advanced",
        "Advanced",
        "Tune: advanced settings",
        "Tune: show / hide nr_requests, max_sectors_kb, nomerges, rq_affinity, wbt_lat_usec",
    ),
    panel_key(
        "E",
        TUNE,
        "export",
        "Export",
        "Tune: export changes",
        "Tune: write the changes in effect as udev rules and a shell script",
    ),
    panel_key(
        "o",
        PROCESSES,
        "toggle_only_active",
        "Only I/O",
        "Processes: only those doing I/O",
        "Processes: only those doing I/O now, or all",
    ),
    panel_key(
        "t",
        PROCESSES,
        "toggle_totals",
        "Totals",
        "Processes: totals / rates",
        "Processes: bytes since the tab opened, or rates",
    ),
    panel_key(
        "i",
        PROCESSES,
        "invert_sort",
        "Invert",
        "Processes: invert sort",
        "Processes: reverse the sort order",
        show=False,
    ),
    panel_key(
        "f",
        PROCESSES,
        "filter",
        "Find process",
        "Processes: find",
        "Processes: filter by command, user, pid or cgroup",
    ),
    panel_key(
        "v",
        PROCESSES,
        "toggle_device_only",
        "This device",
        "Processes: this device only",
        "Processes: only the selected device's issuers, with their device latency (traced "
        "as root), or every process",
    ),
    panel_key(
        "D",
        PROCESSES,
        "toggle_delayacct",
        "Delay acct",
        "Processes: delay accounting",
        "Processes: switch kernel delay accounting (IO%) on or off (root; a host setting, "
        "journaled: u undoes it, quit and restore offer it)",
    ),
    panel_key(
        "o",
        CGROUPS,
        "toggle_only_active",
        "Only I/O",
        "Cgroups: only those doing I/O",
        "Cgroups: only those doing I/O now, or all",
    ),
    panel_key(
        "i",
        CGROUPS,
        "invert_sort",
        "Invert",
        "Cgroups: invert sort",
        "Cgroups: reverse the sort order",
        show=False,
    ),
    panel_key(
        "f",
        CGROUPS,
        "filter",
        "Find cgroup",
        "Cgroups: find",
        "Cgroups: filter by path or name",
    ),
    panel_key(
        "x",
        PROBE,
        "cancel",
        "Cancel probe",
        "Probe: cancel",
        "Probe: cancel the running probe (its file is removed)",
    ),
    panel_key(
        "d",
        PROBE,
        "use_device",
        "Probe device",
        "Probe: target the selected device",
        "Probe: target the device selected in the table (read presets run read-only)",
    ),
)
"""The panels' letter keys, bound on the screen too (while their tab is shown)."""

PANEL_PALETTE: tuple[Command, ...] = (
    panel_key(
        "enter",
        PROBE,
        "start",
        "",
        "Probe: start",
        "Probe: start the highlighted preset (Enter on the Probe tab)",
    ),
    panel_key(
        "enter",
        PROCESSES,
        "details",
        "",
        "Processes: threads and open files",
        "Processes: threads and open block-device files of the selected process",
    ),
    panel_key(
        "escape",
        PROCESSES,
        "close",
        "",
        "Processes: close details / filter",
        "Processes: close the details, else clear the filter",
    ),
    panel_key(
        "left",
        PROCESSES,
        "sort(-1)",
        "",
        "Processes: sort by previous column",
        "Processes: sort by the previous column",
    ),
    panel_key(
        "right",
        PROCESSES,
        "sort(1)",
        "",
        "Processes: sort by next column",
        "Processes: sort by the next column",
    ),
    panel_key(
        "enter",
        CGROUPS,
        "members",
        "",
        "Cgroups: list its processes",
        "Cgroups: the processes of the selected cgroup",
    ),
    panel_key(
        "escape",
        CGROUPS,
        "close",
        "",
        "Cgroups: close processes / filter",
        "Cgroups: close the process list, else clear the filter",
    ),
    panel_key(
        "left",
        CGROUPS,
        "sort(-1)",
        "",
        "Cgroups: sort by previous column",
        "Cgroups: sort by the previous column",
    ),
    panel_key(
        "right",
        CGROUPS,
        "sort(1)",
        "",
        "Cgroups: sort by next column",
        "Cgroups: sort by the next column",
    ),
)
"""Panel actions on Enter, Esc and the arrows: the focused list's own keys, so they are not
bound on the screen; the palette lists them."""


class PanelView(Protocol):
    """What the side-panel keys need of the main screen."""

    focused: Widget | None
    """The widget with the keyboard."""

    @property
    def app(self) -> App[object]:
        """The app (experiments are screens of their own)."""

    @property
    def narrow(self) -> bool:
        """Whether one view at a time is shown."""

    @property
    def view(self) -> str:
        """The view shown in narrow mode."""

    def action_view(self, view: str) -> None:
        """In narrow mode, show one of the views."""

    def set_focus(self, widget: Widget | None) -> None:
        """Focus ``widget`` at once (or nothing)."""

    def query_one(self, selector: str, expect_type: type[W]) -> W:
        """The screen's widget ``selector``."""

    async def panel_ready(self, tab_id: str) -> bool:
        """Mount the panel of ``tab_id`` if it is not yet (it learns the selection); False
        when it is not mounted (the app is quitting)."""


class PanelKeys:
    """Runs a side-panel tab's command from anywhere on the main screen.

    Args:
        view: The main screen: its side panel's tabs and views.
        panels: The deferred tabs' panels, with the tuner, the probe runner factory and the
            refusals (a replay, read-only) they were built with.
        devices: The device a key acts on (the table's cursor).
    """

    def __init__(self, view: PanelView, panels: SidePanels, devices: TableKeys) -> None:
        self.view = view
        self.panels = panels
        self.devices = devices

    @property
    def side(self) -> SidePanel:
        """The side panel (its tabs are up once a panel key can run)."""
        return self.view.query_one("#side-panel", SidePanel)

    def tab_shown(self, tab: str) -> bool:
        """Whether side-panel tab ``tab`` is on screen (on narrow screens: the panel view)."""
        if self.view.narrow and self.view.view != "view-panel":
            return False
        return self.side.active == tab

    def check(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A panel key acts (and shows in the footer) only while its tab is shown."""
        if action == "panel_key":
            return bool(parameters) and self.tab_shown(str(parameters[0]))
        return True

    def show_tab(self, tab_id: str) -> None:
        """Show one side-panel tab (on narrow screens, the panel view too)."""
        view = self.view
        if view.narrow:
            view.action_view("view-panel")
        side = self.side
        focused = view.focused
        if side.active != tab_id and focused is not None and side in focused.ancestors:
            # Else Textual moves the focus to a widget of the tab being hidden (an open filter
            # box), and focusing it switches that tab back.
            view.set_focus(None)
        side.active = tab_id

    async def run(self, tab: str, action: str) -> None:
        """Run the shown panel's ``action`` (its key pressed anywhere on the screen: ``d``
        probes the selected device). The panels first learn of a selection the table has not
        yet reported (see :meth:`TableKeys.device_to_act_on`)."""
        self.devices.device_to_act_on()
        if self.panels.refusals.refused(f"{tab}:{action}"):
            return
        if await self.view.panel_ready(tab):
            await self.panels.panel(tab).run_action(action)

    async def command(self, tab: str, action: str) -> None:
        """From the palette: show ``tab``, then run its panel's ``action``."""
        if self.panels.refusals.refused(f"{tab}:{action}"):
            return
        self.show_tab(tab)
        if await self.view.panel_ready(tab):
            await self.panels.panel(tab).run_action(action)

    async def _tune_panel(self) -> SettingsPanel | None:
        if not await self.view.panel_ready(TUNE):
            return None
        return cast("SettingsPanel", self.panels.panel(TUNE))

    async def tune(self, setting: str) -> None:
        """Edit a queue setting of the selected device from anywhere (R, S)."""
        if self.panels.refusals.refused("tune") or self.devices.device_or_say() is None:
            return
        self.show_tab(TUNE)
        if (panel := await self._tune_panel()) is not None:
            panel.action_edit(setting)

    async def undo_setting(self) -> None:
        """Undo the last setting change (u)."""
        if self.panels.refusals.refused("undo_setting"):
            return
        if (panel := await self._tune_panel()) is not None:
            panel.action_undo()

    async def revert_settings(self) -> None:
        """Put back every setting changed in this run (U)."""
        if self.panels.refusals.refused("revert_settings"):
            return
        if (panel := await self._tune_panel()) is not None:
            panel.action_revert_all()

    def experiment(self) -> None:
        """Queue-depth sweep or A/B of a setting on the selected device (X)."""
        refused = self.panels.refusals.refused("experiment")
        device = None if refused else self.devices.device_or_say()
        if device is None:
            return
        from iotop_plus.tui.screens.experiments import open_experiment

        panels = self.panels
        history = cast("ProbePanel", panels.panel(PROBE)).history
        open_experiment(
            self.view.app, panels.tuner, panels.runner_factory(), device, history=history
        )
