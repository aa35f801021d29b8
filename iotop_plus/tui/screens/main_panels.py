"""The side-panel tabs' keys on the main screen: they work from anywhere while the tab shows.

A panel binds its own letter keys, which Textual runs only while the panel has focus, so
"press D" failed from the device table (#17 item 4). The screen binds the same keys too
(:func:`~iotop_plus.tui.keys.panel_key`), limited to while their tab is shown: from the
table, ``o`` runs the Processes panel's ``o`` when the Processes tab shows and the Cgroups
panel's ``o`` when that one shows. The footer lists them while their tab is shown. None of
them is a screen key (the clash test checks it). Enter and Esc stay with the focused list:
Enter starting a probe while the cursor is in the device table would start fio by surprise.

The palette lists every panel action (:data:`PANEL_PALETTE` adds those on Enter, Esc and the
arrows); choosing one shows its tab first. The screen's own keys that act through a panel
(``R`` ``S`` ``u`` ``U`` on the Tune panel, ``X`` with the Probe panel's history) are here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.widgets import TabbedContent

from iotop_plus.tui.keys import Command, panel_key

if TYPE_CHECKING:
    from iotop_plus.tui.screens.main import MainScreen

TUNE = "tab-tune"
PROCESSES = "tab-processes"
CGROUPS = "tab-cgroups"
PROBE = "tab-probe"

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


class PanelActions:
    """Runs a side-panel tab's command from the screen (mixed into the main screen)."""

    @property
    def _screen(self) -> MainScreen:
        return cast("MainScreen", self)

    def tab_shown(self, tab: str) -> bool:
        """Whether side-panel tab ``tab`` is on screen (on narrow screens: the panel view)."""
        main = self._screen
        if main.narrow and main.view != "view-panel":
            return False
        return main.query_one("#side-panel", TabbedContent).active == tab

    def check_panel_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A panel key acts (and shows in the footer) only while its tab is shown."""
        if action == "panel_key":
            return bool(parameters) and self.tab_shown(str(parameters[0]))
        return True

    async def action_panel_key(self, tab: str, action: str) -> None:
        """Run the shown panel's ``action`` (its key pressed anywhere on the screen: ``d``
        probes the selected device). The panels first learn of a selection the table has not
        yet reported (see ``device_to_act_on``)."""
        main = self._screen
        main.device_to_act_on()
        if main.refusals.refused(f"{tab}:{action}"):
            return
        await main.panel_ready(tab)
        await main.panel(tab).run_action(action)

    async def action_panel_command(self, tab: str, action: str) -> None:
        """From the palette: show ``tab``, then run its panel's ``action``."""
        main = self._screen
        if main.refusals.refused(f"{tab}:{action}"):
            return
        main.action_panel_tab(tab)
        await main.panel_ready(tab)
        await main.panel(tab).run_action(action)

    async def action_tune(self, setting: str) -> None:
        """Edit a queue setting of the selected device from anywhere (R, S)."""
        main = self._screen
        if main.refusals.refused("tune") or main.device_or_say() is None:
            return
        main.action_panel_tab(TUNE)
        await main.panel_ready(TUNE)
        main.settings_panel.action_edit(setting)

    async def action_undo_setting(self) -> None:
        """Undo the last setting change (u)."""
        main = self._screen
        if main.refusals.refused("undo_setting"):
            return
        await main.panel_ready(TUNE)
        main.settings_panel.action_undo()

    async def action_revert_settings(self) -> None:
        """Put back every setting changed in this run (U)."""
        main = self._screen
        if main.refusals.refused("revert_settings"):
            return
        await main.panel_ready(TUNE)
        main.settings_panel.action_revert_all()

    def action_experiment(self) -> None:
        """Queue-depth sweep or A/B of a setting on the selected device (X)."""
        main = self._screen
        device = None if main.refusals.refused("experiment") else main.device_or_say()
        if device is None:
            return
        from iotop_plus.tui.screens.experiments import open_experiment

        history = main.probe_panel.history
        open_experiment(main.app, main.tuner, main.runner_factory(), device, history=history)
