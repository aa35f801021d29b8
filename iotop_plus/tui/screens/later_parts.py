"""The main screen's charts and side panel, mounted just after its first paint.

The first screen a user waits for is the header and the device table with figures. The
charts and the side panel (its tab bar and the Device tab's facts), their modules and their
styles (``later.tcss``) would make the first paint wait for their import, parsing, mounting
and styling (docs/performance.md). Here they are imported and mounted just after that paint
(once it is written, :data:`WRITTEN_S`), and the frame on screen is shown again in them. The
things that wait for them come then too: the Device tab's verdict and throttle check
(:meth:`~iotop_plus.tui.frame_feed.FrameFeed.verdict_shown`), and what was asked of
:meth:`LaterParts.then` (the offer to restore a dead run's settings). Until then, whatever
looks them up finds nothing and leaves them be (:attr:`LaterParts.mounted`).

Keys typed before they are there wait for them (:meth:`LaterParts.hold`): a fast ``p`` or
``3`` right after Enter goes to the Processes tab or the panel view, as it would once they
are up, and never to a screen without them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual import events
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widget import MountError

from iotop_plus.tui.engine import gc_policy

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

    from iotop_plus.tui.widgets.charts import DeviceCharts
    from iotop_plus.tui.widgets.device_panel import DevicePanel
    from iotop_plus.tui.widgets.side_panel import SidePanel


W = TypeVar("W", bound="Widget")


class PartsScreen(Protocol):
    """What the parts need of the screen they are mounted into (the main screen): where to
    mount them, and how to show its device and frame in them once they are up."""

    @property
    def app(self) -> App[Any]: ...

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Timer: ...

    def set_interval(
        self, interval: float, callback: Callable[[], Any], *, name: str | None = None
    ) -> Timer: ...

    def call_after_refresh(self, callback: Callable[[], Any]) -> bool: ...

    def query_one(self, selector: str) -> Widget: ...

    def query(self, selector: str) -> Any: ...

    def refresh_bindings(self) -> None: ...

    def parts_mounted(self) -> None: ...


WRITTEN_S = 0.05
"""How long after the first paint the parts are mounted. The paint's bytes are written to the
terminal by Textual's writer thread, which needs the GIL for it: mounted at once, the parts
hold the GIL during that write and the first figures reach the screen later
(``benchmarks/bench_light.py``; the figures are in docs/performance.md)."""


class LaterParts:
    """Mounts the charts and the side panel after the first paint, holding keys till then."""

    def __init__(self, screen: PartsScreen) -> None:
        self.screen = screen
        self.mounted = False
        """Whether the charts and the side panel are up and showing the frame on screen;
        keys wait until then."""
        self._held: list[events.Key] = []
        self._mounting: asyncio.Future[None] | None = None
        self.freeze_gc = False
        """Once the parts are up, apply the collector's and the C heap's policy
        (:func:`iotop_plus.tui.engine.gc_policy.settle`). The console script's run sets it;
        tests do not (a test process would keep every earlier test's apps)."""
        self.trim_timer: Timer | None = None
        """The heap trim's timer, once started."""
        self._then: list[Callable[[], object]] = []
        self._charts: DeviceCharts | None = None
        self._side: SidePanel | None = None
        self._device_panel: DevicePanel | None = None

    def _up(self, widget: W | None) -> W | None:
        return widget if self.mounted and widget is not None and widget.is_attached else None

    def charts(self) -> DeviceCharts | None:
        """The charts, once they are up."""
        return self._up(self._charts)

    def side(self) -> SidePanel | None:
        """The side panel, once it is up."""
        return self._up(self._side)

    def device_panel(self) -> DevicePanel | None:
        """The Device tab's panel, once it is up."""
        return self._up(self._device_panel)

    def then(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the parts are up (after the held keys), or now if they are."""
        if self.mounted:
            callback()
        else:
            self._then.append(callback)

    def hold(self, event: events.Event) -> bool:
        """Keep ``event`` for later if it is a key and the parts are not up yet."""
        if self.mounted or not isinstance(event, events.Key) or event.is_forwarded:
            return False
        self._held.append(event)
        return True

    def after_first_paint(self) -> None:
        """The first paint is done: mount the parts once it is written (:data:`WRITTEN_S`)."""
        self.screen.set_timer(WRITTEN_S, self.mount)

    async def mount(self) -> None:
        """Mount the charts under the table and the side panel beside it; once they are laid
        out, show the frame on screen in them, then let the held keys through, in the order
        they came."""
        await self._mount_parts()
        # After a refresh, so the panel has laid itself out.
        self.screen.call_after_refresh(self._settle)

    async def ready(self) -> None:
        """The parts up now, for an action that needs the side panel (one run from the
        command palette or a test, or before the first paint has come)."""
        await self._mount_parts()
        self._settle()

    async def _mount_parts(self) -> None:
        if self._mounting is None:
            self._mounting = asyncio.ensure_future(self._mount_both())
        await self._mounting

    async def _mount_both(self) -> None:
        screen = self.screen
        # A signal or a quit just after the first paint unmounts the screen under us: then
        # there is nothing to mount into (this was a traceback on SIGTERM at start).
        # Imported here, not on the way to the first paint.
        from iotop_plus.tui.screens.modal import LATER_CSS
        from iotop_plus.tui.widgets.charts import DeviceCharts
        from iotop_plus.tui.widgets.device_panel import DevicePanel
        from iotop_plus.tui.widgets.side_panel import SidePanel

        # Their rules, before they are mounted (no node on screen matches them: nothing is
        # restyled; the sources parsed before come from the stylesheet's cache).
        stylesheet = screen.app.stylesheet
        if not stylesheet.has_source(LATER_CSS):
            stylesheet.read(LATER_CSS)
            stylesheet.parse()

        self._charts = DeviceCharts(id="charts")
        self._device_panel = DevicePanel(id="device-panel")
        self._side = SidePanel(self._device_panel, id="side-panel")
        with suppress(MountError, NoMatches):
            await screen.query_one("#left").mount(self._charts)
            await screen.query_one("#body").mount(self._side)

    def _settle(self) -> None:
        if self.mounted or not self.screen.query("#side-panel"):
            return  # up already, or the app is closing (see _mount_both)
        self.mounted = True
        screen = self.screen
        screen.parts_mounted()  # they show the selection and the frame on screen
        screen.refresh_bindings()  # the footer lists the shown tab's keys
        if self.freeze_gc:
            self.trim_timer = gc_policy.settle(screen)
        held, self._held = self._held, []
        for key in held:
            # The key itself, not a copy made here: a copy would be sent by this screen, and
            # Textual stops a key at its sender on the way back up, before the app's bindings.
            screen.app.post_message(key)
        then, self._then = self._then, []
        for callback in then:
            callback()
