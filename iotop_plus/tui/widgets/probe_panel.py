"""The Probe tab: pick a preset, edit it, run fio safely, watch it live, read the result.

Interface for the screen (:class:`~iotop_plus.tui.screens.main.MainScreen`):

* ``ProbePanel(runner_factory, roots)``: ``runner_factory()`` returns a
  :class:`~iotop_plus.probe.runner.ProbeRunner` (tests pass one with a chosen fio).
* ``set_device(name)``: the device selected in the table ("Use device" fills
  the target with it, for read presets).
* ``update_device_rates(rates)``: the live iostat line of :attr:`ProbePanel.probe_device`
  (the probed device while a probe runs, else the selected one), shown next to the probe's
  own live figures.
* ``cancel_probe()``: cancels a running probe (fio's process tree is killed, the probe file
  removed); also done on unmount.
* Messages posted up: :class:`ProbePanel.Started`, :class:`ProbePanel.Progress`,
  :class:`ProbePanel.Finished`, :class:`ProbePanel.Failed`.

Keys (active when focus is in the panel, outside a text input): ``enter`` start (on the
preset list or in any field), ``x`` cancel, ``d`` use the selected device as target. The
buttons name these keys. Showing the tab puts the focus on the preset list.
``enter`` on a history line adds it to the comparison (the last two picked are compared; a
new result is compared with the one before).
:func:`~iotop_plus.tui.keys.find_clashes` checks them against the main screen's and the other
panels' keys (tests/tui/test_keys.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option
from textual.worker import Worker

from iotop_plus.probe.durability import run_durability
from iotop_plus.probe.durability_plan import DEFAULT_RUNTIME_S, durability_text, method_line
from iotop_plus.probe.history import ProbeHistory, ProbeRecord, settings_in_force
from iotop_plus.probe.preflight import ExperimentError
from iotop_plus.probe.presets import EDITABLE, PRESETS, Preset, ProbeParams, with_overrides
from iotop_plus.probe.run_types import ProbeError, ProbeOutcome, ProbeProgress, ProbeRequest
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.probe.target import (
    BUSY_RECENT_S,
    ConfirmationNeeded,
    ProbeTarget,
    device_busy_note,
)
from iotop_plus.record.store import FrameStore
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.rates import DeviceRates
from iotop_plus.state import StateDir
from iotop_plus.tui.keys import PROBE, panel_bindings
from iotop_plus.tui.screens.modal import Modal
from iotop_plus.tui.shown import Shown
from iotop_plus.tui.widgets.probe_cards import comparison_table, result_card

#: Parameter inputs in display order: (key in EDITABLE, label).
PARAM_FIELDS: tuple[tuple[str, str], ...] = (
    ("bs", "bs"),
    ("iodepth", "iodepth"),
    ("numjobs", "numjobs"),
    ("runtime", "runtime s"),
    ("size", "size MiB"),
    ("direct", "direct"),
    ("ioengine", "ioengine"),
)


def param_values(params: ProbeParams) -> dict[str, str]:
    """The text each parameter input shows for ``params``."""
    return {
        "bs": params.bs,
        "iodepth": str(params.iodepth),
        "numjobs": str(params.numjobs),
        "runtime": str(params.runtime_s),
        "size": str(params.size_mb),
        "direct": "1" if params.direct else "0",
        "ioengine": params.ioengine,
    }


def iostat_line(name: str, rates: DeviceRates | None) -> str:
    """One short iostat -x line for the device beside the probe."""
    if rates is None:
        return f"{name} iostat: waiting for a second sample"
    return (
        f"{name} iostat: {rates.r_s:,.0f} r/s {rates.w_s:,.0f} w/s "
        f"{rates.kb_s / 1024:,.1f} MiB/s r_await {rates.r_await:.2f} "
        f"w_await {rates.w_await:.2f} aqu {rates.aqu_sz:.1f} util {rates.util:.0f}%"
    )


def progress_line(p: ProbeProgress) -> str:
    """The probe's own live figures."""
    return (
        f"fio ({p.engine}): {p.iops:,.0f} IOPS  {p.kib_s / 1024:,.1f} MiB/s  "
        f"lat {p.mean_lat_us:,.1f} µs  {p.time_left_s:.0f} s left"
    )


class ProbePanel(VerticalScroll):
    """Presets, parameters, target, live progress, the result card and this run's history."""

    DEFAULT_CSS = """
    ProbePanel { height: 1fr; }
    ProbePanel .param { height: 1; }
    ProbePanel .param Input { width: 1fr; }
    ProbePanel #probe-buttons { height: 1; }
    ProbePanel #probe-presets, ProbePanel #probe-history { height: auto; }
    ProbePanel #probe-confirm { display: none; }
    ProbePanel #probe-confirm.shown { display: block; }
    """

    BINDINGS = panel_bindings(PROBE)
    """Enter on the preset list (or in any field) starts a probe; no letter key does: `s` was
    one Shift away from the screen's `S` (scheduler). The list and the inputs handle Enter
    themselves; its binding names it in the help."""

    @dataclass
    class Started(Message):
        """A probe passed the target checks and fio is starting."""

        target: ProbeTarget
        """The checked target."""

    @dataclass
    class Progress(Message):
        """fio reported live figures (about once a second)."""

        progress: ProbeProgress
        """The live figures."""

    @dataclass
    class Finished(Message):
        """A probe finished; its record is in the history."""

        record: ProbeRecord
        """The history record (result + settings in force)."""
        outcome: ProbeOutcome
        """The result and fio's raw JSON."""

    @dataclass
    class Failed(Message):
        """A probe failed or was cancelled; ``text`` is one plain line."""

        text: str
        """What went wrong, for people."""
        confirm_device: str | None = None
        """Set when the probe needs this device name typed to confirm."""

    def __init__(
        self,
        runner_factory: Callable[[], ProbeRunner],
        roots: Roots,
        *,
        id: str | None = None,
        state: StateDir | None = None,
    ) -> None:
        super().__init__(id=id)
        self.runner_factory = runner_factory
        self.roots = roots
        self.history = ProbeHistory.load(state)  # earlier runs' results, from probes.jsonl
        """Every result of this run."""
        self.selected_device: str | None = None
        """The device selected in the table."""
        self.preset: Preset = PRESETS["randread"]
        """The preset chosen."""
        self.running_target: ProbeTarget | None = None
        """The target of the running probe."""
        self.last_progress: ProbeProgress | None = None
        """The latest live figures of the running probe."""
        self._worker: Worker[None] | None = None
        self._compare_picks: list[int] = []
        self.durability = False
        """The durability plan is chosen instead of :attr:`preset`."""

    # -- composition -------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("device: none selected", id="probe-device", markup=False)
        yield Label("Preset", classes="heading")
        yield OptionList(
            *(Option(f"{p.name:<10} {p.title}", id=p.name) for p in PRESETS.values()),
            Option(f"{'durability':<10} Sync methods, as pg_test_fsync", id="durability"),
            id="probe-presets",
        )
        yield Static(id="probe-rationale")
        yield Label("Parameters", classes="heading")
        values = param_values(self.preset.params)
        for key, label in PARAM_FIELDS:
            with Horizontal(classes="param"):
                yield Label(label)
                yield Input(
                    values[key], id=f"probe-param-{key}", tooltip=EDITABLE[key], compact=True
                )
        yield Label("Target", classes="heading")
        yield Input(
            placeholder="directory, or /dev/NAME (read presets)", id="probe-target", compact=True
        )
        yield Input(placeholder="type the device name to confirm", id="probe-confirm", compact=True)
        with Horizontal(id="probe-buttons"):
            yield Button("Start ⏎", id="probe-start", variant="primary", compact=True)
            yield Button("Cancel x", id="probe-cancel", disabled=True, compact=True)
            yield Button("Device d", id="probe-use-device", compact=True)
        yield ProgressBar(total=100, show_eta=False, id="probe-bar")
        yield Static("", id="probe-live", markup=False)
        yield Static("", id="probe-iostat", markup=False)
        yield Static("", id="probe-error", markup=False)
        yield Static("", id="probe-card")
        yield Label("History (enter: compare)", classes="heading")
        yield OptionList(
            *(Option(r.label, id=str(r.number)) for r in self.history.records),
            id="probe-history",
            markup=False,
        )
        yield Static("", id="probe-compare", markup=False)

    def on_mount(self) -> None:
        presets = self.query_one("#probe-presets", OptionList)
        presets.highlighted = list(PRESETS).index(self.preset.name)
        self._show_rationale()

    def on_unmount(self) -> None:
        self.cancel_probe()

    def on_show(self) -> None:
        """The tab is shown (its key or a click): the preset list takes the focus, so Enter
        starts the highlighted preset at once; Enter in the device table never starts fio."""
        presets = self.query_one("#probe-presets", OptionList)
        if not isinstance(self.app.focused, Input):  # never steal the focus from a text box
            presets.focus()

    # -- the interface for the screen ----------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a probe is running."""
        return self._worker is not None and not self._worker.is_finished

    @property
    def probe_device(self) -> str | None:
        """The device whose iostat line belongs beside the probe."""
        if self.running_target is not None and self.running_target.device:
            return self.running_target.device
        return self.selected_device

    def set_device(self, name: str | None) -> None:
        """The table's selection changed."""
        self.selected_device = name
        if self.is_mounted:
            self.query_one("#probe-device", Static).update(
                f"device: {name}" if name else "device: none selected"
            )

    def show_shown(self, shown: Shown) -> None:
        """The frame on screen changed: the live iostat line of :attr:`probe_device`."""
        if shown.frame is not None and self.probe_device is not None:
            self.update_device_rates(shown.frame.rates.get(self.probe_device))

    def update_device_rates(self, rates: DeviceRates | None) -> None:
        """Show the live iostat line of :attr:`probe_device`."""
        name = self.probe_device
        if not self.is_mounted or name is None:
            return
        self.query_one("#probe-iostat", Static).update(iostat_line(name, rates))

    def cancel_probe(self) -> None:
        """Cancel the running probe, if any (fio is killed, the probe file removed)."""
        if self._worker is not None and not self._worker.is_finished:
            self._worker.cancel()

    def request(self) -> ProbeRequest:
        """The request the inputs describe.

        Raises:
            ValueError: one line naming the bad parameter.
        """
        edits = {key: self.query_one(f"#probe-param-{key}", Input).value for key, _ in PARAM_FIELDS}
        params = with_overrides(self.preset.params, edits)
        target = self.query_one("#probe-target", Input).value
        confirm_input = self.query_one("#probe-confirm", Input)
        confirm = confirm_input.value.strip() if confirm_input.has_class("shown") else None
        return ProbeRequest(self.preset, params, target, confirm=confirm or None)

    # -- actions ---------------------------------------------------------------------------

    def action_start(self) -> None:
        """Start a probe with the current inputs."""
        if self.running:
            self._error("a probe is already running (x cancels it)")
            return
        try:
            request = self.request()
        except ValueError as exc:
            self._error(str(exc))
            return
        self._error("")
        self.query_one("#probe-card", Static).update("")
        self.query_one("#probe-live", Static).update("checking the target...")
        self.query_one("#probe-bar", ProgressBar).update(total=request.params.runtime_s, progress=0)
        self.query_one("#probe-start", Button).disabled = True
        self.query_one("#probe-cancel", Button).disabled = False
        self.last_progress = None
        job = self._run_durability(request) if self.durability else self._run(request)
        self._worker = self.run_worker(job, group="probe", exclusive=True, exit_on_error=False)

    def action_cancel(self) -> None:
        """Cancel the running probe."""
        if self.running:
            self.cancel_probe()
            self.query_one("#probe-live", Static).update("cancelling...")

    def action_use_device(self) -> None:
        """Probe the selected device itself (read presets run read-only)."""
        if self.selected_device is None:
            self._error("no device selected in the table")
            return
        self.query_one("#probe-target", Input).value = f"/dev/{self.selected_device}"
        if self.preset.writes:
            self._error(
                f"{self.preset.name} writes: on a device it needs the device unused and its "
                "name typed; choose a read preset or a directory"
            )

    async def _run(self, request: ProbeRequest) -> None:
        reads = not request.preset.writes
        if reads and not await ask_if_busy(self.app, request.target, self.roots):
            self.post_message(self.Failed("probe not started: the device is in use"))
            return
        runner = self.runner_factory()
        try:
            outcome = await runner.run(
                request,
                on_progress=lambda p: self.post_message(self.Progress(p)),
                on_start=lambda t: self.post_message(self.Started(t)),
            )
        except asyncio.CancelledError:
            self.post_message(
                self.Failed(f"probe cancelled: {cancelled_text(self.running_target)}")
            )
            raise
        except ProbeError as exc:
            cause = exc.__cause__
            device = cause.device if isinstance(cause, ConfirmationNeeded) else None
            self.post_message(self.Failed(str(exc), device))
            return
        settings = settings_in_force(self.roots, outcome.target.device)
        record = self.history.add(outcome.result, settings)
        self.post_message(self.Finished(record, outcome))

    async def _run_durability(self, request: ProbeRequest) -> None:
        """The durability plan on the target directory, each method's line as it ends."""
        card = self.query_one("#probe-card", Static)
        lines: list[str] = []

        def ended(m: Any) -> None:
            lines.append(method_line(m))
            card.update(Text("\n".join(lines)))

        try:
            result = await run_durability(
                self.runner_factory(),
                request.target,
                runtime_s=request.params.runtime_s,
                on_method=ended,
                on_progress=lambda _, p: self.post_message(self.Progress(p)),
                history=self.history,
            )
        except asyncio.CancelledError:
            self.post_message(self.Failed("durability probe cancelled: probe files removed"))
            raise
        except ExperimentError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        self._idle()
        self.query_one("#probe-live", Static).update("done")
        card.update(Text(durability_text(result)))

    # -- message handlers --------------------------------------------------------------------

    def on_probe_panel_started(self, message: Started) -> None:
        self.running_target = message.target
        self.query_one("#probe-live", Static).update(f"fio starting on {message.target.label}...")

    def on_probe_panel_progress(self, message: Progress) -> None:
        p = message.progress
        self.last_progress = p
        self.query_one("#probe-bar", ProgressBar).update(
            total=p.runtime_s, progress=min(p.elapsed_s, p.runtime_s)
        )
        self.query_one("#probe-live", Static).update(progress_line(p))

    def on_probe_panel_finished(self, message: Finished) -> None:
        self._idle()
        bar = self.query_one("#probe-bar", ProgressBar)
        bar.update(progress=bar.total or 0)
        self.query_one("#probe-live", Static).update("done")
        card = self.query_one("#probe-card", Static)
        card.update(result_card(message.record.result))
        self.call_after_refresh(card.scroll_visible)  # the result, not the form, in view
        history = self.query_one("#probe-history", OptionList)
        history.add_option(Option(message.record.label, id=str(message.record.number)))
        if len(self.history) >= 2:
            self._compare(len(self.history) - 1, len(self.history))

    def on_probe_panel_failed(self, message: Failed) -> None:
        self._idle()
        self.query_one("#probe-live", Static).update("")
        self._error(message.text)
        confirm = self.query_one("#probe-confirm", Input)
        if message.confirm_device is not None:
            confirm.add_class("shown")
            confirm.placeholder = f"type {message.confirm_device} to confirm"
            confirm.focus()

    @on(OptionList.OptionHighlighted, "#probe-presets")
    def _preset_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        was, self.durability = self.durability, event.option.id == "durability"
        if self.durability:
            self.query_one("#probe-param-runtime", Input).value = str(DEFAULT_RUNTIME_S)
            self.query_one("#probe-rationale", Static).update(
                "durability: each PostgreSQL wal_sync_method with one and two 8 KiB writes "
                "per op, then etcd's fdatasync job, on a file in a directory; runtime is "
                "seconds per method; the other parameters are the plan's."
            )
            return
        if event.option.id is None or (event.option.id == self.preset.name and not was):
            return
        self.preset = PRESETS[event.option.id]
        for key, value in param_values(self.preset.params).items():
            self.query_one(f"#probe-param-{key}", Input).value = value
        confirm = self.query_one("#probe-confirm", Input)
        confirm.remove_class("shown")
        confirm.value = ""
        self._show_rationale()

    @on(OptionList.OptionSelected, "#probe-presets")
    def _preset_selected(self, event: OptionList.OptionSelected) -> None:
        # Enter on a preset: that preset, now (highlighting already chose its parameters).
        event.stop()
        self.action_start()

    @on(OptionList.OptionSelected, "#probe-history")
    def _history_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is None:
            return
        number = int(event.option.id)
        others = [n for n in self._compare_picks if n != number]
        self._compare_picks = [*others[-1:], number]
        if len(self._compare_picks) == 2:
            self._compare(*self._compare_picks)
        else:
            self.query_one("#probe-compare", Static).update(
                f"#{number} picked: pick another to compare"
            )

    @on(Input.Submitted)
    def _input_submitted(self) -> None:
        # Enter in any field starts the probe: letters there are text, not the s key.
        self.action_start()

    @on(Button.Pressed, "#probe-start")
    def _start_pressed(self) -> None:
        self.action_start()

    @on(Button.Pressed, "#probe-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Button.Pressed, "#probe-use-device")
    def _device_pressed(self) -> None:
        self.action_use_device()

    # -- helpers -------------------------------------------------------------------------------

    def _compare(self, a: int, b: int) -> None:
        ra, rb = self.history.get(a), self.history.get(b)
        if ra is not None and rb is not None:
            self.query_one("#probe-compare", Static).update(comparison_table(ra, rb))

    def _show_rationale(self) -> None:
        p = self.preset
        text = Text()
        text.append(f"{p.title}: ", style="bold")
        text.append(f"{p.pattern}. {p.rationale}")
        if p.params.is_quick:
            text.append(
                f" Default {p.params.runtime_s} s is a quick probe; quote 60-300 s runs.",
                style="italic",
            )
        self.query_one("#probe-rationale", Static).update(text)

    def _idle(self) -> None:
        self.running_target = None
        self.query_one("#probe-start", Button).disabled = False
        self.query_one("#probe-cancel", Button).disabled = True

    def _error(self, text: str) -> None:
        error = self.query_one("#probe-error", Static)
        error.update(Text(text))
        # A refusal or failure below the fold must not look as if nothing happened.
        self.call_after_refresh(error.scroll_visible)


class BusyDeviceScreen(Modal[bool]):
    """Asks once before a read probe or sweep on a device in use: dismissed True for y."""

    BINDINGS = [
        Binding("y", "answer(True)", "Probe anyway"),
        Binding("n", "answer(False)", "Do not probe"),
        Binding("escape", "answer(False)", "Do not probe", show=False),
    ]

    def __init__(self, note: str) -> None:
        super().__init__()
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Device in use", classes="title")
            yield Static(self.note, id="busy-note", markup=False)
            yield Static("Probe anyway? y / n", classes="hint", markup=False)

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


def recent_iops(
    store: FrameStore, name: str, window_s: float = BUSY_RECENT_S, now: float | None = None
) -> tuple[float, float] | None:
    """``(r/s + w/s, seconds covered)`` of ``name`` over the frames of the last ``window_s``
    (wall time; each frame's rates weighted by its interval), or None when no frame of it is
    that recent.
    """
    now = time.time() if now is None else now
    columns = store.columns(name, now - 2 * window_s, now).with_rates()
    stamps = columns.walls
    iops = [r + w for r, w in zip(columns.figures["r_s"], columns.figures["w_s"], strict=True)]
    picked = [i for i, t in enumerate(stamps) if t >= now - window_s]
    if not picked:
        return None
    ios = span = 0.0
    for i in picked:
        # A frame's rates cover the time since the frame before it; the first one kept has
        # no frame before it in the window (or at all): the next frame's interval stands in.
        before = stamps[i - 1] if i > 0 else None
        step = stamps[i] - before if before is not None else None
        if step is None or step <= 0:
            step = stamps[i + 1] - stamps[i] if i + 1 < len(stamps) else 1.0
        step = min(step, window_s)
        ios += iops[i] * step
        span += step
    return (ios / span, span) if span > 0 else None


async def ask_if_busy(app: App[Any], target: str, roots: Roots) -> bool:
    """Whether to go on with a read probe or sweep on ``target``: True at once for a
    directory or an idle device; for a device in use (mounted, or at least 50 IOPS) the user
    is asked once, naming the mount and the IOPS. The IOPS are the app's last 5 s of frames
    (its frame ``store``), so the question comes without a wait; an app without frames of the
    device measures 1 s. Call it from a worker."""
    store = getattr(app, "store", None)
    recent = None
    if isinstance(store, FrameStore):  # read on the UI thread, which appends to it

        def recent(name: str) -> tuple[float, float] | None:
            return app.call_from_thread(recent_iops, store, name)

    note = await asyncio.to_thread(device_busy_note, target, roots, recent=recent)
    if note is None:
        return True
    answer: bool = await app.push_screen(BusyDeviceScreen(note), wait_for_dismiss=True)
    return answer


def cancelled_text(target: ProbeTarget | None) -> str:
    """What a cancelled probe left behind, in words true for its kind of target."""
    if target is not None and target.kind == "device":
        return "fio stopped (a device probe makes no file)"
    return "fio stopped, probe file removed"
