"""The thin Textual app: wires the injected Sampler, History and Config to the main screen.

One daemon thread reads the counters each tick and posts a frozen :class:`SampleReady`.
The next tick is due one interval after the previous one *started*; a tick that takes
longer than the interval delays the next one, so ticks never stack.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from iotop_plus.config import MAX_INTERVAL, MIN_INTERVAL, Config, load_config
from iotop_plus.devices.tuner import Journal, Tuner, TuningError, default_journal_path
from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import MAX_ATTRIBUTE_BYTES, printable, read_bounded
from iotop_plus.sampling.history import History
from iotop_plus.sampling.inventory import Inventory
from iotop_plus.sampling.sampler import HostInfo, Sample, Sampler, rates_between
from iotop_plus.tui.messages import SampleReady, SamplerProblem, Tick
from iotop_plus.tui.screens.main import MainScreen
from iotop_plus.tui.screens.settings_modals import KeepOrRevertScreen

EXIT_WATCHDOG_S = 3.0
"""After a signal, the process ends this long after exit began even if Textual's shutdown
hangs (seen when the terminal is already gone: the driver's writer queue never drains)."""

FIRST_INTERVAL_S = 0.5
"""The second sample comes this soon (or one interval, if shorter), so figures show quickly."""

QUICK_FIRST_FRAME_DEVICES = 200
"""Above this many devices, the first frame lists them by name before the inventory is read."""

NR_REQUESTS_REFRESH_S = 30.0
"""How often queue capacities are re-read when the device set has not changed."""


def read_nr_requests(roots: Roots, inventory: Inventory) -> dict[str, int]:
    """``queue/nr_requests`` of every whole device that has one."""
    out: dict[str, int] = {}
    for name, dev in inventory.devices.items():
        if dev.is_partition:
            continue
        try:
            path = roots.sys_block / name / "queue" / "nr_requests"
            out[name] = int(read_bounded(path, MAX_ATTRIBUTE_BYTES).strip() or 0)
        except (OSError, ValueError):
            continue
    return out


class IotopPlusApp(App[int]):
    """iotop-plus: live iostat -x figures per device, with charts and a side panel."""

    CSS_PATH = "app.tcss"
    TITLE = "iotop-plus"

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        sampler: Sampler,
        config: Config,
        history: History | None = None,
        host: HostInfo | None = None,
        interval: float | None = None,
        tuner: Tuner | None = None,
        revert_on_exit: bool = False,
        notes: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.sampler = sampler
        """Reads the counters; injected so tests can pass fixture roots or canned samples."""
        self.config = config
        """Preferences."""
        self.history = history if history is not None else History(config.history_points)
        """Recent rates per device, for the charts (recorded even while paused)."""
        self.host = host if host is not None else sampler.host_info()
        """Header facts."""
        self.interval = config.clamp_interval(interval if interval is not None else config.interval)
        """Seconds between samples."""
        self.latest_tick: Tick | None = None
        """The newest tick, shown or not."""
        self.ticks = 0
        """Ticks received."""
        self.tuner = (
            tuner if tuner is not None else Tuner(sampler.roots, None, is_root=self.host.is_root)
        )
        """Queue-setting changes of this run, with undo."""
        self.revert_on_exit = revert_on_exit
        """Revert this run's setting changes on quit without asking."""
        self.notes = tuple(notes)
        """Lines to show once the screen is up (config problems), as notifications."""
        self._source_notice: str | None = None
        self._last_problem = ""
        self.main_screen = MainScreen(
            sampler.roots,
            config,
            self.history,
            self.host,
            self.interval,
            tuner=self.tuner,
        )
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- lifecycle -----------------------------------------------------------------------

    async def on_mount(self) -> None:
        # The screen must be composed before the first tick arrives.
        await self.push_screen(self.main_screen)
        for note in self.notes:  # printed before the alternate screen too, but gone from view
            self.notify(note, severity="warning", timeout=15, markup=False)
        self._install_signal_handlers()
        self._thread = threading.Thread(
            target=self._sample_loop, name="iotop-plus-sampler", daemon=True
        )
        self._thread.start()

    def _install_signal_handlers(self) -> None:
        # SIGTERM (kill) and SIGHUP (SSH drop) must end the app through its normal exit, so
        # the terminal is restored. SIGINT only arrives when not in raw mode; same treatment.
        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                loop.add_signal_handler(sig, self._exit_on_signal, sig)
        except (RuntimeError, NotImplementedError, ValueError):
            pass  # not the main thread (e.g. some test runners): keys still quit

    def _exit_on_signal(self, sig: int) -> None:
        # A signal cannot be asked questions: kill any fio and remove its file now, apply
        # --revert-on-exit, then leave through Textual's exit so the terminal is restored.
        runner = sys.modules.get("iotop_plus.probe.runner")
        if runner is not None:  # never imported: no probe was ever started
            runner.stop_all_probes()
        if self.revert_on_exit and self.tuner.active:
            with contextlib.suppress(TuningError):
                self.tuner.revert_all()
        watchdog = threading.Timer(EXIT_WATCHDOG_S, os._exit, args=(128 + sig,))
        watchdog.daemon = True
        watchdog.start()
        self.exit(return_code=128 + sig)  # as the headless commands: 143 for TERM, 129 for HUP

    async def action_quit(self) -> None:
        """Quit; when settings were changed in this run, ask whether to keep them."""
        if not self.tuner.active:
            self.exit()
            return
        if self.revert_on_exit:
            self._revert_then_exit()
            return

        def answered(choice: str | None) -> None:
            if choice == "revert":
                self._revert_then_exit()
            elif choice == "keep":
                self.exit()

        if not isinstance(self.screen, KeepOrRevertScreen):
            self.push_screen(KeepOrRevertScreen(self.tuner.active), answered)

    def _revert_then_exit(self) -> None:
        try:
            self.tuner.revert_all()
        except TuningError as exc:
            self.exit(1, message=f"iotop-plus: could not revert every setting: {exc}")
            return
        self.exit()

    def on_unmount(self) -> None:
        self.stop_sampling()
        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                loop.remove_signal_handler(sig)
        except (RuntimeError, NotImplementedError, ValueError):
            pass

    def stop_sampling(self) -> None:
        """Ask the sampler thread to finish and wait briefly for it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def set_sample_interval(self, seconds: float) -> None:
        """Change the interval; the next tick is rescheduled at once."""
        self.interval = min(MAX_INTERVAL, max(MIN_INTERVAL, seconds))
        self._wake.set()

    # ---- the sampler thread --------------------------------------------------------------

    def _sample_loop(self) -> None:
        prev: Sample | None = None
        inventory: Inventory | None = None
        names: frozenset[str] | None = None
        nr_requests: Mapping[str, int] = {}
        nr_read_at = float("-inf")
        cur_first: Sample | None = None
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                cur = self.sampler.sample()
                changed = inventory is None or cur.names != names
                if changed:
                    if inventory is None and len(cur.counters) > QUICK_FIRST_FRAME_DEVICES:
                        # Reading sysfs for thousands of devices takes seconds: list them
                        # by name first, then describe them.
                        self.post_message(SampleReady(self._tick(cur, None, Inventory({}), {})))
                    # Hotplug: re-read the inventory only when the set of devices changes.
                    inventory = self.sampler.inventory(cur.names)
                    names = cur.names
                if inventory is not None and (
                    changed or started - nr_read_at >= NR_REQUESTS_REFRESH_S
                ):
                    nr_requests = read_nr_requests(self.sampler.roots, inventory)
                    nr_read_at = started
                assert inventory is not None
                tick = self._tick(cur, prev, inventory, nr_requests, changed)
                self.post_message(SampleReady(tick))
                if prev is None:
                    cur_first = cur
                prev = cur
            except Exception as exc:  # a bad tick must not kill sampling or the app
                self.post_message(SamplerProblem(f"sampling failed: {exc}"))
            # The first sample has no rates: take the second one soon.
            first = prev is not None and prev is cur_first
            wait = min(self.interval, FIRST_INTERVAL_S) if first else self.interval
            deadline = started + wait
            while not self._stop.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                if self._wake.wait(remaining):
                    self._wake.clear()
                    # The interval changed: re-plan from the same start.
                    deadline = started + self.interval
        self._thread = None

    @staticmethod
    def _tick(
        cur: Sample,
        prev: Sample | None,
        inventory: Inventory,
        nr_requests: Mapping[str, int],
        changed: bool = True,
    ) -> Tick:
        return Tick(
            sample=cur,
            rates=rates_between(prev, cur) if prev is not None else dict.fromkeys(cur.counters),
            inventory=inventory,
            inventory_changed=changed,
            nr_requests=nr_requests,
            elapsed_s=cur.monotonic - prev.monotonic if prev is not None else None,
            ever_used=frozenset(n for n, c in cur.counters.items() if c.ever_used),
        )

    # ---- messages ------------------------------------------------------------------------

    def on_sample_ready(self, message: SampleReady) -> None:
        if not self.is_running:
            # Shutting down: the screens are already gone, but a tick the sampler thread
            # posted just before may still be in the queue (CI hit it once at exit).
            return
        tick = message.tick
        self.ticks += 1
        self.latest_tick = tick
        self.history.record(tick.sample.monotonic, tick.rates)
        if tick.inventory_changed:
            self.history.forget(tick.sample.counters)
        self.main_screen.show_tick(tick)
        notice = tick.sample.notice
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
    history: History | None = None,
    host: HostInfo | None = None,
    interval: float | None = None,
    tuner: Tuner | None = None,
    revert_on_exit: bool = False,
    notes: Iterable[str] = (),
) -> IotopPlusApp:
    """Build the app with its collaborators; tests pass fixture roots or a canned sampler."""
    config = config or Config()
    return IotopPlusApp(
        sampler or Sampler(roots),
        config,
        history=history,
        host=host,
        interval=interval,
        tuner=tuner,
        revert_on_exit=revert_on_exit,
        notes=notes,
    )


def run_tui(args: argparse.Namespace, roots: Roots) -> int:
    """``iotop-plus`` without a subcommand. Returns the exit code."""
    problems: list[str] = []
    config = load_config(problems=problems)
    for line in problems:
        print(f"iotop-plus: {line}", file=sys.stderr)
    interval = getattr(args, "interval", None)
    if interval is not None and not MIN_INTERVAL <= interval <= MAX_INTERVAL:
        print(
            f"iotop-plus: error: --interval {interval:g}: must be {MIN_INTERVAL:g} to "
            f"{MAX_INTERVAL:g} seconds",
            file=sys.stderr,
        )
        return 2
    if interval == 1.0 and config.interval != 1.0:
        interval = config.interval  # the CLI default does not override the config file
    is_root = os.geteuid() == 0
    tuner = Tuner(roots, Journal(default_journal_path()), is_root=is_root)
    app = make_app(
        roots,
        config,
        interval=interval,
        tuner=tuner,
        revert_on_exit=bool(getattr(args, "revert_on_exit", False)),
        notes=problems,
    )
    result = app.run()
    return int(result or 0) if app.return_code in (None, 0) else int(app.return_code or 1)
