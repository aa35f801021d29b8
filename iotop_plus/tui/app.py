"""The thin Textual app: wires the injected frame source, the frame store and Config to the
main screen.

One :class:`~iotop_plus.sampling.clock.SamplerThread` (owned by the main screen's
:class:`FrameFeed`) takes a frame each interval and hands it to the feed on the UI thread;
every view (table, charts, header, Processes) reads the one frame on screen, so ``space``
and ``+``/``-`` reach all of them.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import SystemCommand
from textual.driver import Driver
from textual.screen import Screen

from iotop_plus.config import Config
from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import SamplerThread, clamp_interval
from iotop_plus.sampling.disks.sampler import HostInfo, Sampler
from iotop_plus.sampling.frame.model import Frame, FrameSource
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.sampling.store.joined import JoinedTimeline, OpenOlder
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.tui.engine import strip_cycles
from iotop_plus.tui.engine.input_driver import quiet_driver
from iotop_plus.tui.frame_feed import FrameFeed
from iotop_plus.tui.keys import APP_KEYS, bindings
from iotop_plus.tui.screens.main import MainScreen
from iotop_plus.tui.type_ahead import TypeAheadApp

if TYPE_CHECKING:
    from iotop_plus.devices.tuner import Tuner
    from iotop_plus.probe.runner import ProbeRunner
    from iotop_plus.tui.lifecycle import SettingsLifecycle

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
"""Signals that end the app through its normal exit (:mod:`iotop_plus.tui.lifecycle`)."""


def later_tuner(
    given: Tuner | Callable[[], Tuner] | None, roots: Roots, is_root: bool
) -> Callable[[], Tuner]:
    """The tuner, made the first time it is asked for, once whichever thread asks: ``given``,
    what ``given`` makes, or one without a journal. The tuner's modules (settings, journal,
    conflicts) are not on the way to the first figures: the restore offer, a key or the quit
    load them."""
    if given is not None and not callable(given):
        tuner = given
        return lambda: tuner
    made: list[Tuner] = []
    lock = threading.Lock()

    def once() -> Tuner:
        with lock:
            if not made:
                if given is not None:
                    made.append(given())
                else:
                    from iotop_plus.devices.tuner import Tuner

                    made.append(Tuner(roots, None, is_root=is_root))
            return made[0]

    return once


class IotopPlusApp(TypeAheadApp[int]):
    """iotop-plus: live iostat -x figures per device, with charts and a side panel.

    Thin: it builds the main screen from its collaborators, starts and stops the sampler
    thread and runs the quit and signal lifecycle. The interval, the
    pause and the scrub position are the main screen's state.
    """

    CSS_PATH = "app.tcss"
    TITLE = "iotop-plus"

    BINDINGS = bindings(APP_KEYS)

    def __init__(
        self,
        source: FrameSource,
        config: Config,
        store: FrameStore | None = None,
        host: HostInfo | None = None,
        interval: float | None = None,
        tuner: Tuner | Callable[[], Tuner] | None = None,
        revert_on_exit: bool = False,
        notes: Iterable[str] = (),
        runner_factory: Callable[[], ProbeRunner] | None = None,
        devices: Sequence[str] = (),
        replay: Timeline | None = None,
        replay_at: float | None = None,
        zone: tzinfo | None = None,
        older_history: OpenOlder | None = None,
    ) -> None:
        """``replay``: show this timeline's frames instead of sampling (no sampler thread),
        starting at ``replay_at`` (default its first frame); ``zone`` is the recorded host's.
        ``older_history`` opens this host's recordings, so scrubbing reaches past the ring."""
        strip_cycles.install()  # painted lines freed when dropped, not by the collector
        super().__init__()
        self.source = source
        """Where frames come from; injected so tests can pass fixture roots or canned samples."""
        self.config = config
        """Preferences."""
        self.host = host if host is not None else source.host_info()
        """Header facts."""
        chosen = interval if interval is not None else config.interval
        self._tuner = later_tuner(tuner, source.roots, self.host.is_root)
        self.revert_on_exit = revert_on_exit
        """Revert this run's setting changes on quit without asking."""
        self._lifecycle: SettingsLifecycle | None = None
        self.notes = tuple(notes)
        """Lines to show once the screen is up (config problems), as notifications."""
        self.store = (
            store
            if store is not None
            else FrameStore(config.history_minutes, clamp_interval(chosen), roots=source.roots)
        )
        """The last minutes of frames: the charts' figures, and the frames to scrub back
        through (``[`` ``]`` ``{`` ``}`` ``g``)."""
        timeline: Timeline = self.store
        if replay is not None:
            timeline = replay
        elif older_history is not None:  # the ring, preceded by this host's recordings
            timeline = JoinedTimeline(
                self.store,
                older_history,
                warn=lambda line: self.notify(line, severity="warning", markup=False),
                background=True,
            )
        self.main_screen = MainScreen(
            source.roots,
            config,
            self.host,
            chosen,
            self._tuner,
            runner_factory,
            devices=devices,
            source=source,
            ring=self.store,
            timeline=timeline,
            replay=replay is not None,
            zone=zone,
        )
        """The one coordinating screen; it holds the interval, the pause and the scrub."""
        self.replay_at = replay_at
        """Where a replay starts (wall time); None for its first frame."""

    @property
    def tuner(self) -> Tuner:
        """Queue-setting changes of this run, with undo (made when first asked for)."""
        return self._tuner()

    @property
    def lifecycle(self) -> SettingsLifecycle:
        """The restore offer after the first paint, the keep-or-revert quit, the signal exits
        (its modules load when first asked for)."""
        if self._lifecycle is None:
            from iotop_plus.tui.lifecycle import SettingsLifecycle

            self._lifecycle = SettingsLifecycle(self, self._tuner, self.revert_on_exit)
        return self._lifecycle

    def say_farewell(self) -> None:
        """Write the lines a signal exit left for stderr (call it once the alternate screen
        is gone)."""
        if self._lifecycle is not None:
            self._lifecycle.say_farewell()

    @property
    def feed(self) -> FrameFeed:
        """The sampler thread and what comes of its frames (the main screen's)."""
        return self.main_screen.feed

    @property
    def sampler_thread(self) -> SamplerThread | None:
        """The one clock; started on mount."""
        return self.feed.thread

    @property
    def frames_received(self) -> int:
        """Frames received."""
        return self.feed.frames_received

    @property
    def latest_frame(self) -> Frame | None:
        """The newest frame, shown or not."""
        return self.feed.latest_frame

    async def on_mount(self) -> None:
        live = not self.main_screen.scrubber.replay
        if live:
            # Frames are read while the screen composes: the feed holds those that come before
            # it is mounted, and it shows them from its on_mount, before its first paint.
            self.feed.start(self.main_screen.interval)
        await self.push_screen(self.main_screen)
        for note in self.notes:  # printed before the alternate screen too, but gone from view
            self.notify(note, severity="warning", timeout=15, markup=False)
        self._signal_handlers(True)
        if not live:
            self.main_screen.scrubber.start(self.replay_at)  # times in the recorded zone
            return
        self.main_screen.later.then(lambda: self.lifecycle.offer_restore())

    async def action_quit(self) -> None:
        """Quit; when settings were changed in this run, ask whether to keep them."""
        self.lifecycle.quit()

    def on_unmount(self) -> None:
        self.stop_sampling()
        self._signal_handlers(False)

    def _signal_handlers(self, on: bool) -> None:
        """SIGTERM (kill), SIGHUP (SSH drop) and SIGINT (when not in raw mode) exit cleanly
        (:meth:`~iotop_plus.tui.lifecycle.SettingsLifecycle.exit_on_signal`), or no longer."""
        try:
            loop = asyncio.get_running_loop()
            for sig in EXIT_SIGNALS:
                if on:
                    loop.add_signal_handler(sig, self._exit_on_signal, sig)
                else:
                    loop.remove_signal_handler(sig)
        except (RuntimeError, NotImplementedError, ValueError):
            pass  # not the main thread (e.g. some test runners): keys still quit

    def _exit_on_signal(self, sig: int) -> None:
        self.lifecycle.exit_on_signal(sig)

    def stop_sampling(self) -> None:
        """Stop the sampler thread and wait briefly for it."""
        self.feed.stop()

    async def on_event(self, event: events.Event) -> None:
        """Keys typed before the main screen's charts and side panel are up wait for them."""
        main: MainScreen | None = getattr(self, "main_screen", None)  # None in App.__init__
        stack = self.screen_stack if main is not None else []
        if main is not None and stack and stack[-1] is main and main.later.hold(event):
            return
        await super().on_event(event)

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal, with an input thread that sleeps until a key
        comes on Linux (:mod:`iotop_plus.tui.engine.input_driver`)."""
        return quiet_driver(super().get_driver_class())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        from iotop_plus.tui.palette import screen_commands  # the palette, once opened

        yield from super().get_system_commands(screen)
        yield from screen_commands(self.main_screen)


def make_app(
    roots: Roots,
    config: Config | None = None,
    *,
    sampler: Sampler | None = None,
    source: FrameSource | None = None,
    store: FrameStore | None = None,
    host: HostInfo | None = None,
    interval: float | None = None,
    tuner: Tuner | Callable[[], Tuner] | None = None,
    revert_on_exit: bool = False,
    notes: Iterable[str] = (),
    runner_factory: Callable[[], ProbeRunner] | None = None,
    devices: Sequence[str] = (),
    older_history: OpenOlder | None = None,
) -> IotopPlusApp:
    """Build the app with its collaborators: the frame source (or a sampler for the live
    one), the tuner and the probe runner factory. Tests pass fixture roots, a canned sampler,
    a frame source or a runner of their own. ``devices``: kernel names named on the command
    line, shown alone (the first selected)."""
    return IotopPlusApp(
        source if source is not None else live_source(roots, sampler),
        config or Config(),
        store=store,
        host=host,
        interval=interval,
        tuner=tuner,
        revert_on_exit=revert_on_exit,
        notes=notes,
        runner_factory=runner_factory,
        devices=devices,
        older_history=older_history,
    )
