"""The thin Textual app: wires the injected frame source, History and Config to the main screen.

One :class:`~iotop_plus.sampling.clock.SamplerThread` (owned by :class:`FrameFeed`) takes a
frame each interval and posts it as a frozen :class:`FrameReady`; every view (table, charts,
header, Processes) is fed from that one frame, so ``space`` and ``+``/``-`` reach all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen

from iotop_plus.config import Config
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import SamplerThread, clamp_interval
from iotop_plus.sampling.frame import Frame, FrameSource, LiveSource
from iotop_plus.sampling.history import History
from iotop_plus.sampling.joined_timeline import JoinedTimeline
from iotop_plus.sampling.ring_timeline import RingTimeline
from iotop_plus.sampling.sampler import HostInfo, Sampler
from iotop_plus.sampling.timeline import Timeline
from iotop_plus.tui.frame_feed import FrameFeed
from iotop_plus.tui.lifecycle import SettingsLifecycle
from iotop_plus.tui.messages import FrameReady, SamplerProblem
from iotop_plus.tui.palette import screen_commands
from iotop_plus.tui.screens.main import MainScreen
from iotop_plus.tui.scrub import Scrubber
from iotop_plus.tui.widgets.header import HostHeader

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
        devices: Sequence[str] = (),
        replay: Timeline | None = None,
        replay_at: float | None = None,
        zone: tzinfo | None = None,
        older_history: Callable[[], Timeline | None] | None = None,
    ) -> None:
        """``replay``: show this timeline's frames instead of sampling (no sampler thread),
        starting at ``replay_at`` (default its first frame); ``zone`` is the recorded host's.
        ``older_history`` opens this host's recordings, so scrubbing reaches past the ring."""
        super().__init__()
        self.source = source
        """Where frames come from; injected so tests can pass fixture roots or canned samples."""
        self.config = config
        """Preferences."""
        self.history = history if history is not None else History(config.history_points)
        """Recent rates per device, for the charts (recorded even while paused)."""
        self.host = host if host is not None else source.host_info()
        """Header facts."""
        chosen = interval if interval is not None else config.interval
        self.set_reactive(IotopPlusApp.interval, clamp_interval(chosen))
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
        self.main_screen = MainScreen(
            source.roots,
            config,
            self.history,
            self.host,
            self.interval,
            self.tuner,
            runner_factory,
            devices=devices,
        )
        self.timeline = RingTimeline(config.history_minutes, self.interval)
        """The last minutes of frames, to scrub back through (``[`` ``]`` ``{`` ``}`` ``g``)."""
        self.feed = FrameFeed(source, self.history, self.main_screen, self.timeline)
        self.replay_at = replay_at
        """Where a replay starts (wall time); None for its first frame."""
        timeline: Timeline = self.timeline
        if replay is not None:
            timeline = replay
        elif older_history is not None:  # the ring, preceded by this host's recordings
            timeline = JoinedTimeline(
                self.timeline,
                older_history,
                warn=lambda line: self.notify(line, severity="warning", markup=False),
            )
        self.scrubber = Scrubber(self, timeline, replay=replay is not None, zone=zone)
        """The frame on screen when it is not the live one: ``[ ] { } g l``."""
        """The sampler thread and what comes of its frames."""

    @property
    def sampler_thread(self) -> SamplerThread | None:
        """The one clock; started on mount."""
        return self.feed.thread

    @property
    def ticks(self) -> int:
        """Frames received."""
        return self.feed.ticks

    @property
    def latest_frame(self) -> Frame | None:
        """The newest frame, shown or not (``latest_tick`` is the older name)."""
        return self.feed.latest_frame

    latest_tick = latest_frame

    async def on_mount(self) -> None:
        # The screen must be composed before the first frame arrives.
        await self.push_screen(self.main_screen)
        for note in self.notes:  # printed before the alternate screen too, but gone from view
            self.notify(note, severity="warning", timeout=15, markup=False)
        self.lifecycle.install_signal_handlers()
        if self.scrubber.replay:
            self.main_screen.query_one(HostHeader).zone = self.scrubber.zone
            self.scrubber.start(self.replay_at)
            return
        self.lifecycle.offer_restore()
        self.feed.start(self.post_message, self.interval)

    async def action_quit(self) -> None:
        """Quit; when settings were changed in this run, ask whether to keep them."""
        self.lifecycle.quit()

    def on_unmount(self) -> None:
        self.stop_sampling()
        self.lifecycle.remove_signal_handlers()

    def stop_sampling(self) -> None:
        """Stop the sampler thread and wait briefly for it."""
        self.feed.stop()

    def set_sample_interval(self, seconds: float) -> None:
        """Change the interval (clamped); every view follows at once."""
        self.interval = clamp_interval(seconds)

    def watch_interval(self, seconds: float) -> None:
        self.feed.set_interval(seconds)
        if self.main_screen.is_mounted:
            self.main_screen.show_interval(seconds)

    def watch_paused(self, paused: bool) -> None:
        if not self.main_screen.is_mounted or self.scrubber.replay:
            return
        if not paused:
            self.scrubber.at = None  # back to live: the newest frame, shown below
        frame = self.latest_frame
        self.main_screen.show_paused(paused)
        if not paused and frame is not None:
            self.main_screen.show_frame(frame)

    def want_processes(self, on: bool) -> None:
        """A view shows processes (or no longer does); the next frames carry them or not.

        In replay or history no next frame comes until a scrub: the frame on screen shows its
        (recorded) processes at once."""
        self.feed.want_processes(on)
        shown = self.main_screen.last_tick if self.main_screen.is_mounted else None
        if on and shown is not None and (self.scrubber.replay or self.scrubber.scrubbed):
            self.call_later(self.main_screen.show_frame, shown)

    def want_latency(self, on: bool) -> None:
        """The latency columns are shown (or no longer): the tracer runs only meanwhile."""
        self.feed.want_latency(on)

    def want_cgroups(self, on: bool) -> None:
        """The Cgroups tab is shown (or no longer); the next frames carry cgroups or not."""
        self.feed.want_cgroups(on)

    def set_detail_cgroup(self, path: str | None) -> None:
        """Frames list the processes of cgroup ``path``."""
        self.feed.set_detail_cgroup(path)

    def set_detail_pid(self, pid: int | None) -> None:
        """Frames carry threads and open files of ``pid``; the next one comes at once."""
        self.feed.set_detail_pid(pid)

    # Shutting down, the screens are gone but a message posted just before may still be queued.
    def on_frame_ready(self, message: FrameReady) -> None:
        if self.is_running:
            self.feed.take(message.frame, self.paused)

    def on_sampler_problem(self, message: SamplerProblem) -> None:
        if self.is_running:
            self.feed.problem(message.text)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from screen_commands(self.main_screen)


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
    devices: Sequence[str] = (),
    older_history: Callable[[], Timeline | None] | None = None,
) -> IotopPlusApp:
    """Build the app with its collaborators: the frame source (or a sampler for the live
    one), the tuner and the probe runner factory. Tests pass fixture roots, a canned sampler,
    a frame source or a runner of their own. ``devices``: kernel names named on the command
    line, shown alone (the first selected)."""
    return IotopPlusApp(
        source if source is not None else LiveSource(roots, sampler),
        config or Config(),
        history=history,
        host=host,
        interval=interval,
        tuner=tuner,
        revert_on_exit=revert_on_exit,
        notes=notes,
        runner_factory=runner_factory,
        devices=devices,
        older_history=older_history,
    )
