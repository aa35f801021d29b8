"""The main screen's side panel: a tab bar over the panel of the tab shown.

The bar (:class:`~iotop_plus.tui.widgets.tab_bar.TabBar`) is one widget, and each tab's
panel is a child of the side panel itself, with no pane or switcher around it: Textual's paint
cost follows the number of widgets on screen. A tab's panel is mounted the first time the tab
is shown (:meth:`SidePanel.add_panel`, from :mod:`iotop_plus.tui.screens.side_panels`); until
then the tab has no widget at all. A panel that was shown stays mounted, hidden while another
tab shows, so it keeps its state (a running probe, a filter, a sort).

Setting :attr:`SidePanel.active` shows a tab and posts :class:`SidePanel.TabShown`, as picking
it in the bar does.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import AwaitMount, Widget

from iotop_plus.tui.widgets.tab_bar import BarTab, TabBar

SIDE_TABS = (
    BarTab("tab-device", "Device", "I"),
    BarTab("tab-tune", "Tune"),
    BarTab("tab-processes", "Processes", "p"),
    BarTab("tab-cgroups", "Cgroups", "C"),
    BarTab("tab-blocked", "Blocked", "B"),
    BarTab("tab-files", "Files", "F"),
    BarTab("tab-probe", "Probe", "P"),
    BarTab("tab-sync", "Sync", "Y"),
)
"""The side panel's tabs, in the bar's order, with the keys that show them (the Tune tab is
shown by the keys that tune: ``R``, ``S``)."""


class SidePanel(Vertical):
    """The tab bar and the panel of the tab shown.

    Args:
        first: The panel of the first tab (shown at once).
        tabs: The tabs; the first is shown first.
    """

    active: reactive[str] = reactive("", init=False)
    """The id of the tab shown."""

    class TabShown(Message):
        """Another tab is shown (picked in the bar, or :attr:`SidePanel.active` set)."""

        def __init__(self, side: SidePanel, tab_id: str) -> None:
            super().__init__()
            self.side = side
            self.tab_id = tab_id

        @property
        def control(self) -> SidePanel:
            return self.side

    def __init__(
        self, first: Widget, tabs: Sequence[BarTab] = SIDE_TABS, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.tabs = tuple(tabs)
        self.set_reactive(SidePanel.active, self.tabs[0].id)
        self.bar = TabBar(self.tabs, self.active, id="side-tabs")
        """The tab bar."""
        self._panels: dict[str, Widget] = {self.tabs[0].id: first}

    def compose(self) -> ComposeResult:
        yield self.bar
        yield self._panels[self.active]

    def watch_active(self, tab_id: str) -> None:
        self.bar.active = tab_id
        for tab, panel in self._panels.items():
            panel.display = tab == tab_id
        self.post_message(self.TabShown(self, tab_id))

    def on_tab_bar_picked(self, event: TabBar.Picked) -> None:
        event.stop()
        self.active = event.tab_id

    def panel_of(self, tab_id: str) -> Widget | None:
        """The panel mounted for ``tab_id``, if there is one yet."""
        panel = self._panels.get(tab_id)
        return panel if panel is not None and panel.parent is self else None

    def panels(self) -> list[Widget]:
        """The panels mounted so far, shown or not."""
        return [panel for panel in self._panels.values() if panel.parent is self]

    def tab_of(self, child: Widget) -> str | None:
        """The tab whose panel ``child`` is (None for the bar)."""
        return next((tab for tab, panel in self._panels.items() if panel is child), None)

    def add_panel(self, tab_id: str, panel: Widget) -> AwaitMount:
        """Mount ``panel`` as the panel of ``tab_id`` (shown if that tab is)."""
        self._panels[tab_id] = panel
        panel.display = tab_id == self.active
        return self.mount(panel)
