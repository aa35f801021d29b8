"""The UI side of the one clock: the sampler thread's frames come in here.

:class:`FrameFeed` owns the :class:`~iotop_plus.sampling.clock.SamplerThread`, whose frames it
takes on the UI thread directly (the sampler thread schedules :meth:`FrameFeed.take` on the
app's event loop), counts each, keeps it in the frame store (paused or not), hands it to the
main screen, which shows it when it follows live, and says once what the source or the
sampler reports wrong. It also tells the source what the next frames should carry
(processes, one process's details) for the Processes tab.

Frames that come while the main screen composes are held, and taken when it is mounted
(:meth:`FrameFeed.release`): its first paint already has figures.

The verdict is judged off the UI thread: the sampler thread judges each frame for the
devices shown (:attr:`FrameFeed.judge_devices`) with the frames before it
(:class:`~iotop_plus.why.verdicts.Judge`) and the frame carries it; a frame shown
without it (scrubbed back, replayed, another device selected) is judged on a worker thread,
with the frames before it read there too (:meth:`FrameFeed.ask_verdict`), and the screen
attaches the verdict to the frame on screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.clock import SamplerThread
from iotop_plus.sampling.frame.model import (
    CGROUPS,
    LATENCY_QUEUE,
    PROCESSES,
    THROTTLES,
    Frame,
    FrameSource,
)
from iotop_plus.sampling.health.gate import HEALTH
from iotop_plus.sampling.processes.issuers_part import ISSUERS
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.text import printable
from iotop_plus.tui.engine.refresh_batch import one_update
from iotop_plus.tui.messages import Notifies
from iotop_plus.tui.replay_reads import ReplayReads
from iotop_plus.why.lookback import LookbackFeed
from iotop_plus.why.verdicts import Judge, judge, timeline_lookback, with_verdicts

if TYPE_CHECKING:
    from iotop_plus.why.quiet_history import QuietHistory

MAX_PENDING = 4
"""Frames handed to the UI and not yet taken, at most. While the UI is that far behind (a
host so loaded that it cannot draw at the chosen pace) the sampler thread waits, and its next
frame covers the longer interval, instead of queueing frames without bound (a TUI that fell
behind grew by the queued frames: docs/performance.md)."""
PENDING_WAIT_S = 5.0
"""The longest the sampler thread waits for the UI before handing a frame over all the same."""

CallSoon = Callable[..., object]
"""Runs ``callback(*args)`` on the UI thread soon, from any thread (an event loop's
``call_soon_threadsafe``); it does not wait for it."""


class FrameView(Notifies, Protocol):
    """Where the feed hands frames and tells problems (the main screen)."""

    def frame_arrived(self, frame: Frame) -> None:
        """A frame arrived: shown if the screen follows live."""

    def show_problem(self, text: str) -> None:
        """Show a one-line problem for a few seconds."""

    def post_message(self, message: Message) -> bool:
        """Queue ``message`` for the screen (from any thread)."""

    def call_later(self, callback: Callable[..., object], *args: Any) -> bool:
        """Run ``callback`` as the screen's next message (an error in it ends the app)."""


def loop_call_soon(failed: Callable[[Exception], object]) -> CallSoon:
    """The running event loop's ``call_soon_threadsafe``, dropping calls once it is closed
    (a frame read as the app quits); an error in a call goes to ``failed``."""
    loop = asyncio.get_running_loop()

    def guarded(callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        try:
            callback(*args)
        except Exception as error:
            failed(error)

    def call(callback: Callable[..., object], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the app has quit
            loop.call_soon_threadsafe(guarded, callback, args)

    return call


def _raise(error: Exception) -> None:
    raise error


class FrameFeed:
    """Frames from one sampler thread to the frame store and the main screen."""

    def __init__(
        self,
        source: FrameSource,
        screen: FrameView,
        store: FrameStore | None = None,
    ) -> None:
        self.source = source
        """Where frames come from."""
        self._issuers_by: set[str] = set()
        """The views that show issuers (the tracer attributes requests while any does)."""
        self._asked: set[str] = set()
        """The parts this feed asked the source for."""
        self._detail: tuple[int | None, str | None] = (None, None)
        """The process and cgroup the frames detail."""
        self.screen = screen
        """Where frames are shown, and problems told."""
        self.store = store if store is not None else FrameStore()
        """Every frame of the last minutes (kept while paused too): the charts' figures and
        marks, and the frames to scrub back through."""
        self.thread: SamplerThread | None = None
        """The one clock; made by :meth:`start`."""
        self.latest_frame: Frame | None = None
        """The newest frame, shown or not."""
        self.judge = Judge()
        """Judges each frame on the sampler thread, with the frames before it."""
        self.judge_devices: frozenset[str] = frozenset()
        """The devices whose verdict the sampler thread judges (the one the Device tab shows)."""
        self.verdicts_shown = False
        """Whether the Device tab is up (:meth:`verdict_shown`): no verdict is judged before,
        and every frame goes into the judge's lookback all the same."""
        self._judging: ReplayReads | None = None
        self._verdict_asked: tuple[int, float, str] | None = None
        self._verdict_judged: Frame | None = None
        """The frame of :attr:`_verdict_asked` with its verdict, once judged."""
        self._quiet_history: QuietHistory | None = None
        """The quiet awaits before a looked-up frame the judge never saw (a replay's)."""
        self.frames_received = 0
        """Frames received."""
        self._held: list[Frame] | None = []
        """Frames taken before :meth:`release` (the screen is not mounted yet)."""
        self._held_problems: list[str] = []
        self._source_notice: str | None = None
        self._last_problem = ""
        self._pending = 0
        self._pending_changed = threading.Condition()
        self._stopping = False

    def start(self, interval: float, call: CallSoon | None = None) -> None:
        """Start the sampler thread; each frame is taken by :meth:`take` on the UI thread,
        through ``call`` (default: the running event loop's, so call this on it; an error
        there ends the app with its traceback, as one in a message handler does)."""
        soon = call if call is not None else loop_call_soon(self._failed_on_ui)
        self.source.want(HEALTH, True)  # a worker thread reads it, never this one or the UI
        self._stopping = False
        self.thread = SamplerThread(
            self.source,
            deliver=lambda frame: self._hand_over(soon, frame),
            failed=lambda text: soon(self.problem, text),
            interval=interval,
        )
        self.thread.start()

    def _failed_on_ui(self, error: Exception) -> None:
        self.screen.call_later(_raise, error)  # raised in a handler: Textual shows it, exits

    @property
    def lookback(self) -> LookbackFeed:
        """Each device's quiet awaits over every frame taken: the verdict's baseline."""
        return self.judge.lookback

    def _hand_over(self, soon: CallSoon, frame: Frame) -> None:
        """Judge ``frame`` and hand it to the UI thread (in the sampler thread) once fewer
        than :data:`MAX_PENDING` wait."""
        if frame.inventory.devices or not frame.inventory_changed:
            # (an early frame lists names only: the lookback waits for the full one)
            frame = self.judge.judged(frame, self.judge_devices if self.verdicts_shown else ())
        with self._pending_changed:
            # Not for ever: a frame the app drops (shutting down) is never taken.
            self._pending_changed.wait_for(
                lambda: self._pending < MAX_PENDING or self._stopping, PENDING_WAIT_S
            )
            self._pending += 1
        soon(self.take, frame)

    def stop(self) -> None:
        """Stop the sampler thread and wait briefly for it."""
        with self._pending_changed:
            self._stopping = True
            self._pending_changed.notify_all()
        if self.thread is not None:
            self.thread.stop()
        self.source.close()  # the latency tracer dies with the app, not later

    def set_interval(self, seconds: float) -> None:
        """The next frames come every ``seconds``."""
        if self.thread is not None:
            self.thread.interval = seconds
        self.store.set_interval(seconds)

    @property
    def held(self) -> int:
        """Frames held until the screen is mounted."""
        return len(self._held or ())

    def release(self) -> None:
        """The screen is mounted: take the frames and problems held, oldest first, and each
        one after."""
        held, self._held = self._held or [], None
        for frame in held:
            self.take(frame)
        problems, self._held_problems = self._held_problems, []
        for text in problems:
            self.problem(text)

    def take(self, frame: Frame) -> None:
        """A frame arrived (on the UI thread): count and record it; the screen shows it when
        it follows live. Held until :meth:`release` (still waiting: the sampler waits once
        :data:`MAX_PENDING` do); dropped once stopped."""
        if self._held is not None and not self._stopping:
            self._held.append(frame)
            return
        with self._pending_changed:
            if self._pending:
                self._pending -= 1
                self._pending_changed.notify()
        if not self._stopping:
            self._take(frame)

    def _take(self, frame: Frame) -> None:
        self.frames_received += 1
        self.latest_frame = frame
        with one_update(self.screen):  # the repaints it asks for reach the screen at once
            self.store.append(frame)  # (an early frame that lists names only is not kept)
            self.screen.frame_arrived(frame)
            notice = frame.sample.notice
            if notice != self._source_notice:
                self._source_notice = notice
                if notice:  # the /sys/block/*/stat fallback: say so once, and in the header
                    self.screen.notify(
                        printable(notice), severity="warning", timeout=10, markup=False
                    )
                    self.screen.show_problem(notice)

    def ask_verdict(
        self,
        frame: Frame,
        device: str,
        timeline: Timeline | None,
        judged: Callable[[Frame], object],
    ) -> None:
        """Judge ``device`` in ``frame`` (shown without its verdict) on a worker thread, with
        the frames before it in ``timeline`` (read there too) and the quiet awaits before it
        (the live judge's, or, for a frame it never saw, read from ``timeline`` there too);
        ``judged`` gets the frame with it, on the UI thread. Asked again for the same frame
        and device, the frame judged then comes again (once judged); a newer ask supersedes
        one in flight. Nothing before the Device tab is up (:meth:`verdict_shown`)."""
        if not self.verdicts_shown:
            return
        asked = (frame.seq, frame.wall_time, device)
        if asked == self._verdict_asked:
            if self._verdict_judged is not None:  # shown again without it (back to live)
                self.screen.call_later(judged, self._verdict_judged)
            return
        self._verdict_asked, self._verdict_judged = asked, None
        history = self._quiet_history
        if timeline is not None and (history is None or history.timeline is not timeline):
            from iotop_plus.why.quiet_history import QuietHistory

            history = self._quiet_history = QuietHistory(timeline)
        if self._judging is None:
            self._judging = ReplayReads(self.screen.post_message, self.problem)

        def judging() -> Frame:
            lookback = timeline_lookback(frame, timeline, self.lookback, history)
            return with_verdicts(frame, judge(frame, lookback, (device,)))

        def done(result: Frame) -> None:
            if self._verdict_asked == asked:
                self._verdict_judged = result
            judged(result)

        self._judging.submit(judging, done)

    def problem(self, text: str) -> None:
        """A frame failed: notify once per new problem (not every tick); the header shows it
        (held until the screen is mounted)."""
        if self._held is not None:
            self._held_problems.append(text)
            return
        if text != self._last_problem:
            self._last_problem = text
            self.screen.notify(printable(text), severity="error", timeout=10, markup=False)
        self.screen.show_problem(text)

    def _ask(self, part: str, on: bool) -> None:
        """``source.want(part, on)``, remembering what this feed asked for."""
        (self._asked.add if on else self._asked.discard)(part)
        self.source.want(part, on)

    def verdict_shown(self) -> None:
        """The Device tab is up: verdicts are judged from now on, and from the next frame on
        they also check throttling (cheaply: only the limited cgroups are read). Not before:
        the diagnosis and the cgroup reader's modules and its first scan would delay the
        first figures, which show no verdict."""
        self.verdicts_shown = True
        self.source.want(THROTTLES, True)

    def want_processes(self, on: bool) -> None:
        """A view shows processes (or no longer does); the next frames carry them or not."""
        was = PROCESSES in self._asked
        self._ask(PROCESSES, on)
        if on and not was and self.thread is not None:
            self.thread.sample_now()  # rows now; their rates from the frame after

    def want_latency(self, on: bool) -> None:
        """The latency columns are shown (or no longer): start or stop the tracer. The queue
        split is shown with them, so ``block_rq_insert`` is traced too."""
        self.source.want(LATENCY_QUEUE, on)
        self.want_issuers(on, by="latency")  # the Device tab names the top issuers

    def want_issuers(self, on: bool, by: str = "processes") -> None:
        """A view (``by``) shows who does each device's I/O (or no longer): the tracer
        charges each request to its process while any view asks (``ISSUERS``)."""
        (self._issuers_by.add if on else self._issuers_by.discard)(by)
        self.source.want(ISSUERS, bool(self._issuers_by))
        if self.thread is not None:
            self.thread.sample_now()

    def want_files(self, on: bool) -> str | None:
        """The Files tab is shown (or no longer); the next frames carry files or not (as root
        the tracer then counts file I/O). Returns why not, when the source reads no files."""
        try:
            self.source.want("files", on)
        except ValueError as err:  # a source that knows no such part
            return str(err)
        if on and self.thread is not None:
            self.thread.sample_now()
        return None

    def want_cgroups(self, on: bool) -> None:
        """A view shows cgroups (or no longer does); the next frames carry them or not."""
        was = CGROUPS in self._asked
        self._ask(CGROUPS, on)
        if on and not was and self.thread is not None:
            self.thread.sample_now()

    def want_part(self, key: str, on: bool) -> None:
        """A view shows frame part ``key`` (:mod:`iotop_plus.sampling.frame.registry`), or no
        longer: the next frames carry it or not; the first comes at once."""
        was = key in self._asked
        self._ask(key, on)
        if on and not was and self.thread is not None:
            self.thread.sample_now()

    def set_detail_cgroup(self, path: str | None) -> None:
        """Frames list the processes of cgroup ``path``; the next one comes at once."""
        self._detail = (self._detail[0], path)
        self.source.detail(*self._detail)
        if path is not None and self.thread is not None:
            self.thread.sample_now()

    def set_detail_pid(self, pid: int | None) -> None:
        """Frames carry threads and open files of ``pid``; the next one comes at once."""
        self._detail = (pid, self._detail[1])
        self.source.detail(*self._detail)
        if pid is not None and self.thread is not None:
            self.thread.sample_now()
