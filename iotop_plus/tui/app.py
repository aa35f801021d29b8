"""The thin Textual app: wires the injected frame source, History and Config to the main screen.

One :class:`~iotop_plus.sampling.clock.SamplerThread` takes a frame each interval and posts
it as a frozen :class:`FrameReady`; every view (table, charts, header, Processes) is fed from
that one frame, so ``space`` and ``+``/``-`` reach all of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen

from iotop_plus.config import Config
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import SamplerThread, clamp_interval
from iotop_plus.sampling.diskstats import printable
from iotop_plus.sampling.frame import PROCESSES, Frame, FrameSource, LiveSource
from iotop_plus.sampling.history import History
from iotop_plus.sampling.sampler import HostInfo, Sampler
from iotop_plus.tui.lifecycle import SettingsLifecycle
from iotop_plus.tui.messages import FrameReady, SamplerProblem
from iotop_plus.tui.screens.main import MainScreen

if TYPE_CHECKING:
    from iotop_plus.probe.runner import ProbeRunner

QUIT_HELP = "quit (SIGTERM and SIGHUP also quit cleanly)"
"""The help screen's line for the quit keys."""


class IotopPlusApp(App[int]):
    """iotop-plus: live iostat -x figures per device, with charts and a side panel."""

    CSS_PATH = "app.tcss"
    TITLE = "iotop-plus"

    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip=QUIT_HELP),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, tooltip=QUIT_HELP),
    ]

    interval: reactive[float] = reactive(1.0, init=False)
    """Seconds between frames: the one clock of every view (``+``/``-`` change it)."""
    paused: reactive[bool] = reactive(False, init=False)
    """Display frozen (``space``); frames still feed the history."""

    def __init__(
        self,
        source: FrameSource,
        config: Config,
        history: History | None = None,
        host: HostInfo | None = None,
        interval: float | None = None,
        tuner: Tuner | None = None,
        revert_on_exit: bool = False,
        notes: Iterable[str] = (),
        runner_factory: Callable[[], ProbeRunner] | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        """Where frames come from; injected so tests can pass fixture roots or canned samples."""
        self.config = config
        """Preferences."""
        self.history = history if history is not None else History(config.history_points)
        """Recent rates per device, for the charts (recorded even while paused)."""
        self.host = host if host is not None else source.host_info()
        """Header facts."""
        self.set_reactive(
            IotopPlusApp.interval,
            clamp_interval(interval if interval is not None else config.interval),
        )
        self.latest_frame: Frame | None = None
        """The newest frame, shown or not."""
        self.ticks = 0
        """Frames received."""
        self.tuner = (
            tuner if tuner is not None else Tuner(source.roots, None, is_root=self.host.is_root)
        )
        """Queue-setting changes of this run, with undo."""
        self.revert_on_exit = revert_on_exit
        """Revert this run's setting changes on quit without asking."""
        self.lifecycle = SettingsLifecycle(self, self.tuner, revert_on_exit)
        """The restore offer at start, the keep-or-revert quit, the signal exits."""
        self.notes = tuple(notes)
        """Lines to show once the screen is up (config problems), as notifications."""
        self._source_notice: str | None = None
        self._last_problem = ""
        self.main_screen = MainScreen(
            source.roots,
            config,
            self.history,
            self.host,
            self.interval,
            tuner=self.tuner,
            runner_factory=runner_factory,
        )
        self.sampler_thread: SamplerThread | None = None
        """The one clock; started on mount."""

    @property
    def latest_tick(self) -> Frame | None:
        """The newest frame (older name)."""
        return self.latest_frame

    # ---- lifecycle -----------------------------------------------------------------------

    async def on_mount(self) -> None:
        # The screen must be composed before the first tick arrives.
        await self.push_screen(self.main_screen)
        for note in self.notes:  # printed before the alternate screen too, but gone from view
            self.notify(note, severity="warning", timeout=15, markup=False)
        self.lifecycle.install_signal_handlers()
        self.lifecycle.offer_restore()
        self.sampler_thread = SamplerThread(
            self.source,
            deliver=lambda frame: self.post_message(FrameReady(frame)),
            failed=lambda text: self.post_message(SamplerProblem(text)),
            interval=self.interval,
        )
        self.sampler_thread.start()

    async def action_quit(self) -> None:
        """Quit; when settings were changed in this run, ask whether to keep them."""
        self.lifecycle.quit()

    def on_unmount(self) -> None:
        self.stop_sampling()
        self.lifecycle.remove_signal_handlers()

    def stop_sampling(self) -> None:
        """Stop the sampler thread and wait briefly for it."""
        if self.sampler_thread is not None:
            self.sampler_thread.stop()

    def set_sample_interval(self, seconds: float) -> None:
        """Change the interval (clamped); every view follows at once."""
        self.interval = clamp_interval(seconds)

    def watch_interval(self, seconds: float) -> None:
        if self.sampler_thread is not None:
            self.sampler_thread.interval = seconds
        if self.main_screen.is_mounted:
            self.main_screen.show_interval(seconds)

    def watch_paused(self, paused: bool) -> None:
        if not self.main_screen.is_mounted:
            return
        frame = self.latest_frame
        self.main_screen.show_paused(paused, frame.wall_time if frame else None)
        if not paused and frame is not None:
            self.main_screen.show_frame(frame)

    def want_processes(self, on: bool) -> None:
        """A view shows processes (or no longer does); the next frames carry them or not."""
        was = getattr(self.source, "wants", lambda part: False)(PROCESSES)
        self.source.want(PROCESSES, on)
        if on and not was and self.sampler_thread is not None:
            self.sampler_thread.sample_now()  # rows now; their rates from the frame after

    def set_detail_pid(self, pid: int | None) -> None:
        """Frames carry threads and open files of ``pid``; the next one comes at once."""
        if isinstance(self.source, LiveSource):
            self.source.detail_pid = pid
        if pid is not None and self.sampler_thread is not None:
            self.sampler_thread.sample_now()

    # ---- messages ------------------------------------------------------------------------

    def on_frame_ready(self, message: FrameReady) -> None:
        if not self.is_running:
            # Shutting down: the screens are already gone, but a frame the sampler thread
            # posted just before may still be in the queue (CI hit it once at exit).
            return
        frame = message.frame
        self.ticks += 1
        self.latest_frame = frame
        if frame.inventory.devices or not frame.inventory_changed:
            # (an early frame lists names only: the history waits for the full one)
            self.history.record(frame.sample.monotonic, frame.rates)
            if frame.inventory_changed:
                self.history.forget(frame.sample.counters)
        self.main_screen.count_frame(frame)
        if not self.paused:
            self.main_screen.show_frame(frame)
        notice = frame.sample.notice
        if notice != self._source_notice:
            self._source_notice = notice
            if notice:  # the /sys/block/*/stat fallback: say so once, and in the header
                self.notify(printable(notice), severity="warning", timeout=10, markup=False)
                self.main_screen.show_problem(notice)

    def on_sampler_problem(self, message: SamplerProblem) -> None:
        if self.is_running:
            if message.text != self._last_problem:  # once per new problem, not every tick
                self._last_problem = message.text
                self.notify(printable(message.text), severity="error", timeout=10, markup=False)
            self.main_screen.show_problem(message.text)

    # ---- command palette -----------------------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        main = self.main_screen
        for title, help_text, action in main.commands():
            yield SystemCommand(title, help_text, _runner(main, action))


def _runner(screen: MainScreen, action: str) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await screen.run_action(action)

    return run


def make_app(
    roots: Roots,
    config: Config | None = None,
    *,
    sampler: Sampler | None = None,
    source: FrameSource | None = None,
    history: History | None = None,
    host: HostInfo | None = None,
    interval: float | None = None,
    tuner: Tuner | None = None,
    revert_on_exit: bool = False,
    notes: Iterable[str] = (),
    runner_factory: Callable[[], ProbeRunner] | None = None,
) -> IotopPlusApp:
    """Build the app with its collaborators: the frame source (or a sampler for the live
    one), the tuner and the probe runner factory. Tests pass fixture roots, a canned sampler,
    a frame source or a runner of their own."""
    config = config or Config()
    return IotopPlusApp(
        source if source is not None else LiveSource(roots, sampler),
        config,
        history=history,
        host=host,
        interval=interval,
        tuner=tuner,
        revert_on_exit=revert_on_exit,
        notes=notes,
        runner_factory=runner_factory,
    )
