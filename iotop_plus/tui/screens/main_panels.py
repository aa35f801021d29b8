"""The side-panel tabs' keys on the main screen: they work from anywhere while the tab shows.

A panel binds its own keys, which Textual runs only while the panel has focus, so "press D"
would fail from the device table. The screen binds the same keys too, limited to while their
tab is shown: from the table, ``o`` runs the Processes panel's ``o`` when the Processes tab
shows and the Cgroups panel's ``o`` when that one shows. Both bindings are made from one
record of the key registry (:data:`~iotop_plus.tui.keys.PANEL_COMMANDS`). The footer lists
them while their tab is shown. None of them is a screen key (the clash test checks it). Enter
and Esc stay with the focused list: Enter starting a probe while the cursor is in the device
table would start fio by surprise; the palette lists those
(:data:`~iotop_plus.tui.keys.PANEL_PALETTE`), and choosing one shows its tab first. The
screen's own keys that act through a panel (``R`` ``S`` ``u`` ``U`` on the Tune panel, ``X``
with the Probe panel's history) are here too.

:class:`PanelKeys` runs them: a collaborator the main screen owns, given the screen as a
:class:`PanelView`, the side panels, the table's keys (the device a key acts on) and a wait
for the side panel to be mounted. Its ``action_*`` methods are the screen's actions (the
screen takes them as its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from iotop_plus.tui.keys import PROBE, TUNE
from iotop_plus.tui.screens.main_table import TableKeys
from iotop_plus.tui.screens.main_views import ScreenViews
from iotop_plus.tui.screens.side_panels import SidePanels
from iotop_plus.tui.widgets.side_panel import SidePanel

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from iotop_plus.tui.widgets.probe_panel import ProbePanel
    from iotop_plus.tui.widgets.settings_panel import SettingsPanel

W = TypeVar("W", bound="Widget")


class PanelView(Protocol):
    """What the side-panel keys need of the main screen."""

    focused: Widget | None
    """The widget with the keyboard."""

    @property
    def app(self) -> App[object]:
        """The app (experiments are screens of their own)."""

    layout_views: ScreenViews
    """Which views are shown (narrow: one at a time)."""

    def action_view(self, view: str) -> None:
        """In narrow mode, show one of the views."""

    def set_focus(self, widget: Widget | None) -> None:
        """Focus ``widget`` at once (or nothing)."""

    def query_one(self, selector: str, expect_type: type[W]) -> W:
        """The screen's widget ``selector``."""


class PanelKeys:
    """Runs a side-panel tab's command from anywhere on the main screen.

    Args:
        view: The main screen: its side panel's tabs and views.
        panels: The deferred tabs' panels, with the tuner, the probe runner factory and the
            refusals (a replay, read-only) they were built with.
        devices: The device a key acts on (the table's cursor).
        ready: Waits until the side panel is mounted (it comes after the first paint).
    """

    def __init__(
        self,
        view: PanelView,
        panels: SidePanels,
        devices: TableKeys,
        ready: Callable[[], Awaitable[None]],
    ) -> None:
        self.view = view
        self.panels = panels
        self.devices = devices
        self.ready = ready

    @property
    def side(self) -> SidePanel:
        """The side panel (its tabs are up once a panel key can run)."""
        return self.view.query_one("#side-panel", SidePanel)

    def tab_shown(self, tab: str) -> bool:
        """Whether side-panel tab ``tab`` is on screen (on narrow screens: the panel view)."""
        views = self.view.layout_views
        if views.narrow and views.view != "view-panel":
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
        if view.layout_views.narrow:
            view.action_view("view-panel")
        side = self.side
        focused = view.focused
        if side.active != tab_id and focused is not None and side in focused.ancestors:
            # Else Textual moves the focus to a widget of the tab being hidden (an open filter
            # box), and focusing it switches that tab back.
            view.set_focus(None)
        side.active = tab_id

    async def action_panel_tab(self, tab_id: str) -> None:
        """Show one side-panel tab (on narrow screens, the panel view too)."""
        await self.ready()
        self.show_tab(tab_id)

    async def action_panel_key(self, tab: str, action: str) -> None:
        """Run the shown panel's ``action`` (its key pressed anywhere on the screen: ``d``
        probes the selected device). The panels first learn of a selection the table has not
        yet reported (see :meth:`TableKeys.device_to_act_on`)."""
        self.devices.device_to_act_on()
        if self.panels.refusals.refused(f"{tab}:{action}"):
            return
        if await self.panels.ready(tab):
            await self.panels.panel(tab).run_action(action)

    async def action_panel_command(self, tab: str, action: str) -> None:
        """From the palette: show ``tab``, then run its panel's ``action``."""
        if self.panels.refusals.refused(f"{tab}:{action}"):
            return
        self.show_tab(tab)
        if await self.panels.ready(tab):
            await self.panels.panel(tab).run_action(action)

    async def _tune_panel(self) -> SettingsPanel | None:
        if not await self.panels.ready(TUNE):
            return None
        return cast("SettingsPanel", self.panels.panel(TUNE))

    async def action_tune(self, setting: str) -> None:
        """Edit a queue setting of the selected device from anywhere (R, S)."""
        await self.ready()
        if self.panels.refusals.refused("tune") or self.devices.device_or_say() is None:
            return
        self.show_tab(TUNE)
        if (panel := await self._tune_panel()) is not None:
            panel.action_edit(setting)

    async def action_undo_setting(self) -> None:
        """Undo the last setting change (u)."""
        await self.ready()
        if self.panels.refusals.refused("undo_setting"):
            return
        if (panel := await self._tune_panel()) is not None:
            panel.action_undo()

    async def action_revert_settings(self) -> None:
        """Put back every setting changed in this run (U)."""
        await self.ready()
        if self.panels.refusals.refused("revert_settings"):
            return
        if (panel := await self._tune_panel()) is not None:
            panel.action_revert_all()

    def action_experiment(self) -> None:
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
