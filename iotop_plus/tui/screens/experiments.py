"""The experiment screens: set one up, then watch a QD sweep or an A/B of a setting run.

:class:`ExperimentSetupScreen` (a modal) asks what to run on a device and is dismissed with an
:class:`ExperimentPlan` (or None); :func:`open_experiment` chains it to the run screen.

Push :class:`ExperimentScreen` with an :class:`ExperimentPlan`; it starts at once, shows each
step as it completes, plots IOPS and mean/p99 latency against QD (sweep) or the headline
figure per run (A/B), and ends with the table and the verdict. Escape cancels a running
experiment (fio is killed, an A/B's setting is put back), then closes the screen. The screen
is dismissed with the result, or None when cancelled or failed.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, replace
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Label, Static
from textual.worker import Worker
from textual_plotext import PlotextPlot

from iotop_plus.devices.conflicts import TuningError
from iotop_plus.devices.tuner import Tuner
from iotop_plus.probe.experiment_plans import (
    DEFAULT_MAX_QD,
    DEFAULT_ROUNDS,
    DEFAULT_STEP_RUNTIME_S,
    AbResult,
    AbRun,
    SweepResult,
    SweepStep,
    ab_table,
    parse_ab_spec,
    sweep_table,
)
from iotop_plus.probe.experiments import run_ab, run_sweep
from iotop_plus.probe.history import ProbeHistory
from iotop_plus.probe.preflight import ExperimentError
from iotop_plus.probe.presets import PRESETS, ProbeParams
from iotop_plus.probe.run_types import ProbeProgress
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.tui.screens.modal import LATER_CSS, Modal
from iotop_plus.tui.widgets.key_hints import KeyHints
from iotop_plus.tui.widgets.probe_panel import ask_if_busy


@dataclass(frozen=True)
class ExperimentPlan:
    """What to run."""

    kind: str
    """``sweep`` or ``ab``."""
    target: str
    """A block device path or a directory."""
    device: str | None = None
    """For an A/B: the device whose setting changes."""
    setting: str | None = None
    """For an A/B: ``read_ahead_kb``, ``scheduler`` or ``nr_requests``."""
    values: tuple[str, ...] = ()
    """For an A/B: the values, baseline first."""
    preset: str = "randread"
    """The probe preset."""
    rounds: int = DEFAULT_ROUNDS
    """For an A/B: rounds of every value."""
    runtime_s: int = 5
    """For an A/B: seconds per run."""
    max_qd: int = DEFAULT_MAX_QD
    """For a sweep: the deepest queue."""
    step_runtime_s: int = DEFAULT_STEP_RUNTIME_S
    """For a sweep: seconds per step."""
    size_mb: int | None = None
    """Probe file size or device span in MiB (None: the preset's)."""

    @property
    def title(self) -> str:
        """One line saying what runs."""
        if self.kind == "sweep":
            return (
                f"QD sweep on {self.target}: {self.preset}, QD 1..{self.max_qd}, "
                f"{self.step_runtime_s} s per step"
            )
        return (
            f"A/B of {self.device} {self.setting} {' vs '.join(self.values)} "
            f"({self.preset} on {self.target}, {self.rounds} rounds)"
        )


def plan_from_fields(
    device: str,
    what: str,
    target: str,
    preset: str,
    rounds: str,
    runtime: str,
    max_qd: str,
) -> ExperimentPlan:
    """The plan the setup fields describe.

    Args:
        device: The device the experiment is for.
        what: ``sweep``, or ``SETTING=V1,V2[,...]`` for an A/B.
        target: A block device path or a directory.
        preset: The probe preset (a sweep needs a read preset).
        rounds: A/B rounds.
        runtime: Seconds per sweep step or per A/B run.
        max_qd: The sweep's deepest queue.

    Raises:
        ValueError: one line naming the bad field.
    """
    what, target, preset = what.strip(), target.strip(), preset.strip()
    if not target:
        raise ValueError("target: give a device path or a directory")
    if preset not in PRESETS:
        raise ValueError(f"preset: one of {', '.join(PRESETS)}, not {preset!r}")
    seconds = _whole("runtime", runtime, 1, 3600)
    if what == "sweep":
        if PRESETS[preset].writes:
            raise ValueError(f"preset: a sweep reads only, and {preset} writes")
        qd = _whole("max QD", max_qd, 1, 1024)
        return ExperimentPlan(
            "sweep", target, device=device, preset=preset, max_qd=qd, step_runtime_s=seconds
        )
    setting, values = parse_ab_spec(what)
    return ExperimentPlan(
        "ab",
        target,
        device=device,
        setting=setting,
        values=values,
        preset=preset,
        rounds=_whole("rounds", rounds, 1, 100),
        runtime_s=seconds,
    )


def _whole(name: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{name}: not a whole number: {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name}: must be from {low} to {high}: {text!r}")
    return value


class ExperimentSetupScreen(Modal[ExperimentPlan | None]):
    """Asks what to run on a device; dismissed with the plan, or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    #: (field id, label, default) of the inputs, in order.
    FIELDS: tuple[tuple[str, str, str], ...] = (
        ("what", "sweep or SETTING=V1,V2", "sweep"),
        ("target", "target device or dir", ""),
        ("preset", "fio preset", "randread"),
        ("runtime", "seconds per step/run", str(DEFAULT_STEP_RUNTIME_S)),
        ("max-qd", "sweep: deepest QD", str(DEFAULT_MAX_QD)),
        ("rounds", "A/B: rounds", str(DEFAULT_ROUNDS)),
    )

    def __init__(self, device: str, target: str | None = None) -> None:
        super().__init__()
        self.device = device
        self.target = target or f"/dev/{device}"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Experiment on {self.device}", classes="title", markup=False)
            yield Static(
                "A sweep reads at QD 1, 2, 4 ...; an A/B compares values of read_ahead_kb, "
                "scheduler or nr_requests (e.g. read_ahead_kb=0,1024). Enter starts.",
                classes="hint",
            )
            for field_id, label, default in self.FIELDS:
                value = self.target if field_id == "target" else default
                # A label beside every box: a filled-in box shows no placeholder ("3", "128").
                with Horizontal(classes="setup-field"):
                    yield Label(label, classes="setup-label", markup=False)
                    yield Input(value, placeholder=label, id=f"setup-{field_id}", tooltip=label)
            yield Static("", id="setup-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#setup-what", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        fields = {f: self.query_one(f"#setup-{f}", Input).value for f, _, _ in self.FIELDS}
        try:
            plan = plan_from_fields(
                self.device,
                fields["what"],
                fields["target"],
                fields["preset"],
                fields["rounds"],
                fields["runtime"],
                fields["max-qd"],
            )
        except ValueError as exc:
            self.query_one("#setup-error", Static).update(str(exc))
            return
        self.dismiss(plan)

    def action_cancel(self) -> None:
        """Close without a plan."""
        self.dismiss(None)


class ExperimentScreen(Screen[SweepResult | AbResult | None]):
    """Runs one experiment and shows it as it goes."""

    BINDINGS = [Binding("escape", "stop", "Cancel / close")]

    CSS_PATH = LATER_CSS

    DEFAULT_CSS = """
    ExperimentScreen #exp-live { height: 1; }
    ExperimentScreen #exp-plots { height: 1fr; }
    """

    @dataclass
    class Step(Message):
        """A sweep step finished."""

        step: SweepStep
        """The finished step."""

    @dataclass
    class Run(Message):
        """An A/B run finished."""

        run: AbRun
        """The finished run."""

    @dataclass
    class Live(Message):
        """A live status line."""

        text: str
        """The line (plain text)."""

    @dataclass
    class Done(Message):
        """The experiment ended: a result, or a line saying why not."""

        result: SweepResult | AbResult | None
        """The result, or None when it did not finish."""
        text: str
        """A line saying how it ended."""

    def __init__(
        self,
        tuner: Tuner,
        runner: ProbeRunner,
        plan: ExperimentPlan,
        history: ProbeHistory | None = None,
    ) -> None:
        super().__init__()
        self.tuner = tuner
        self.runner = runner
        self.plan = plan
        self.history = history
        self.steps: list[SweepStep] = []
        """Sweep steps shown so far."""
        self.runs: list[AbRun] = []
        """A/B runs shown so far."""
        self.result: SweepResult | AbResult | None = None
        """The final result, once done."""
        self.finished = False
        """Whether the experiment has ended (done, failed or cancelled)."""
        self._worker: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.plan.title, id="exp-title", markup=False)
            yield Static("starting...", id="exp-live", markup=False)
            with Horizontal(id="exp-plots"):
                yield PlotextPlot(id="exp-plot-iops")
                yield PlotextPlot(id="exp-plot-latency")
            yield Static("", id="exp-table", markup=False)
            yield Static("", id="exp-verdict", markup=False)
        yield KeyHints()

    def on_mount(self) -> None:
        self._worker = self.run_worker(self._run(), group="experiment", exit_on_error=False)

    @property
    def running(self) -> bool:
        """Whether the experiment is still going."""
        return not self.finished

    def action_stop(self) -> None:
        """Cancel a running experiment (restoring the setting), or close a finished one."""
        if self.running and self._worker is not None:
            self.query_one("#exp-live", Static).update("cancelling: stopping fio...")
            self._worker.cancel()
            return
        self.dismiss(self.result)

    async def _run(self) -> None:
        plan = self.plan
        preset = PRESETS[plan.preset]
        params: ProbeParams = preset.params
        if plan.size_mb is not None:
            params = replace(params, size_mb=plan.size_mb)
        if plan.kind == "sweep" and not await ask_if_busy(self.app, plan.target, self.runner.roots):
            self.post_message(self.Done(None, "not started: the device is in use"))
            return
        try:
            result: SweepResult | AbResult
            if plan.kind == "sweep":
                result = await run_sweep(
                    self.runner,
                    plan.target,
                    max_qd=plan.max_qd,
                    step_runtime_s=plan.step_runtime_s,
                    preset=preset,
                    params=params,
                    on_step=lambda s: self.post_message(self.Step(s)),
                    on_progress=self._sweep_progress,
                    history=self.history,
                )
            else:
                assert plan.device is not None and plan.setting is not None
                params = replace(params, runtime_s=plan.runtime_s)
                result = await run_ab(
                    self.tuner,
                    self.runner,
                    plan.device,
                    plan.setting,
                    plan.values,
                    preset,
                    plan.target,
                    params=params,
                    rounds=plan.rounds,
                    on_run=lambda r: self.post_message(self.Run(r)),
                    on_progress=self._ab_progress,
                    history=self.history,
                )
        except asyncio.CancelledError:
            self.post_message(self.Done(None, "cancelled: " + self._restored_text()))
            raise
        except (ExperimentError, TuningError) as exc:
            self.post_message(self.Done(None, f"failed: {exc}; " + self._restored_text()))
            return
        self.post_message(self.Done(result, "done"))

    def _restored_text(self) -> str:
        plan = self.plan
        if plan.kind != "ab" or plan.device is None or plan.setting is None:
            if plan.target.startswith("/dev/"):
                return "fio stopped (a device probe makes no file)"
            return "fio stopped, probe file removed"
        value = self.tuner.read_one(plan.device, plan.setting).value
        return f"fio stopped; {plan.device} {plan.setting} is {value}"

    def _sweep_progress(self, qd: int, p: ProbeProgress) -> None:
        self.post_message(
            self.Live(f"QD {qd}: {p.elapsed_s:.0f}/{p.runtime_s:.0f} s  {p.iops:,.0f} IOPS")
        )

    def _ab_progress(self, round_no: int, value: str, p: ProbeProgress) -> None:
        self.post_message(
            self.Live(
                f"round {round_no}, {self.plan.setting}={value}: "
                f"{p.elapsed_s:.0f}/{p.runtime_s:.0f} s  {p.iops:,.0f} IOPS"
            )
        )

    # -- message handlers ------------------------------------------------------------------

    def on_experiment_screen_live(self, message: Live) -> None:
        if not self.finished:
            self.query_one("#exp-live", Static).update(message.text)

    def on_experiment_screen_step(self, message: Step) -> None:
        self.steps.append(message.step)
        self.query_one("#exp-table", Static).update(sweep_table(self.steps))
        self._draw_sweep()

    def on_experiment_screen_run(self, message: Run) -> None:
        self.runs.append(message.run)
        lines = [
            f"round {r.round} {self.plan.setting}={r.effective}: {r.iops:,.0f} IOPS "
            f"{r.bw_kib_s / 1024:,.1f} MiB/s  mean {r.mean_lat_us:,.1f} µs  fio I/Os "
            f"{r.fio_ios:,}  device I/Os {r.device_ios if r.device_ios is not None else '-'}"
            for r in self.runs
        ]
        self.query_one("#exp-table", Static).update("\n".join(lines))
        self._draw_ab()

    def on_experiment_screen_done(self, message: Done) -> None:
        self.finished = True
        self.result = message.result
        self.query_one("#exp-live", Static).update(message.text + "  (escape closes)")
        result = message.result
        if result is not None and self.history is not None:  # for the recorder and exporter
            kind = "sweep" if isinstance(result, SweepResult) else "ab"
            self.history.add_experiment(kind, result)
        if isinstance(result, SweepResult):
            self.query_one("#exp-table", Static).update(sweep_table(result.steps))
            self.query_one("#exp-verdict", Static).update("\n".join(result.analysis.summary()))
        elif isinstance(result, AbResult):
            self.query_one("#exp-table", Static).update(ab_table(result))

    # -- plots -------------------------------------------------------------------------------

    def _draw_sweep(self) -> None:
        # x is log2(QD) so that 1, 2, 4 ... 128 are evenly spaced.
        xs = [math.log2(s.qd) for s in self.steps]
        labels = [str(s.qd) for s in self.steps]
        iops_plot = self.query_one("#exp-plot-iops", PlotextPlot)
        plt = iops_plot.plt
        plt.clear_figure()
        plt.title("IOPS vs QD")
        plt.plot(xs, [s.iops for s in self.steps], marker="braille", label="IOPS")
        plt.xticks(xs, labels)
        plt.xlabel("queue depth")
        iops_plot.refresh()
        lat_plot = self.query_one("#exp-plot-latency", PlotextPlot)
        plt = lat_plot.plt
        plt.clear_figure()
        plt.title("latency µs vs QD")
        plt.plot(xs, [s.mean_lat_us for s in self.steps], marker="braille", label="mean")
        p99 = [(x, s.p99_us) for x, s in zip(xs, self.steps, strict=True) if s.p99_us is not None]
        if p99:
            plt.plot([x for x, _ in p99], [y for _, y in p99], marker="braille", label="p99")
        plt.xticks(xs, labels)
        plt.xlabel("queue depth")
        lat_plot.refresh()

    def _draw_ab(self) -> None:
        values = list(dict.fromkeys(r.value for r in self.runs))
        for plot_id, title, figure in (
            ("#exp-plot-iops", "IOPS per run", lambda r: r.iops),
            ("#exp-plot-latency", "mean latency µs per run", lambda r: r.mean_lat_us),
        ):
            plot = self.query_one(plot_id, PlotextPlot)
            plt = plot.plt
            plt.clear_figure()
            plt.title(title)
            # One unit per plot (its title); the legend names the setting, not a bare "1024"
            # that reads as a value on the axis; x is the round, in whole numbers.
            setting = self.plan.setting or "value"
            for value in values:
                mine = [r for r in self.runs if r.value == value]
                plt.scatter(
                    [r.round for r in mine], [figure(r) for r in mine], label=f"{setting}={value}"
                )
            rounds = sorted({r.round for r in self.runs})
            plt.xticks([float(n) for n in rounds], [str(n) for n in rounds])
            plt.xlabel("round")
            plot.refresh()


def open_experiment(
    app: App[Any],
    tuner: Tuner,
    runner: ProbeRunner,
    device: str,
    history: ProbeHistory | None = None,
    target: str | None = None,
) -> None:
    """Ask what to run on ``device`` (setup modal), then push the run screen."""

    def start(plan: ExperimentPlan | None) -> None:
        if plan is not None:
            app.push_screen(ExperimentScreen(tuner, runner, plan, history))

    app.push_screen(ExperimentSetupScreen(device, target), start)


__all__ = [
    "ExperimentPlan",
    "ExperimentScreen",
    "ExperimentSetupScreen",
    "open_experiment",
    "plan_from_fields",
]
