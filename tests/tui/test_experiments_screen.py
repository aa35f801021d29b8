"""The experiment screen in a small host app, with real fio on the test's own loop device."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Input, Static
from textual_plotext import PlotextPlot

from iotop_plus.devices.journal import Journal
from iotop_plus.devices.tuner import Tuner
from iotop_plus.probe.experiment_plans import AbResult, SweepResult
from iotop_plus.probe.history import ProbeHistory
from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.roots import Roots
from iotop_plus.tui.screens.experiments import (
    ExperimentPlan,
    ExperimentScreen,
    ExperimentSetupScreen,
    open_experiment,
    plan_from_fields,
)
from tests.support import wait
from tests.support.queue_guard import restored_queue

pytestmark = [pytest.mark.slow, pytest.mark.root]


class ExperimentHost(App[None]):
    """Pushes one experiment screen on start and keeps what it was dismissed with."""

    def __init__(self, plan: ExperimentPlan, fio: str) -> None:
        super().__init__()
        roots = Roots()
        self.tuner = Tuner(roots, Journal(None))
        self.history = ProbeHistory()
        self.screen_under_test = ExperimentScreen(
            self.tuner, ProbeRunner(roots, fio), plan, self.history
        )
        self.dismissed: list[SweepResult | AbResult | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.screen_under_test, self.dismissed.append)


@pytest.fixture
def loop(make_loop: Callable[..., str], fio_bin: str) -> Iterator[str]:
    """The test's own loop device, its queue settings restored afterwards."""
    name = make_loop(64, direct_io=True)
    with restored_queue(name):
        yield name


wait_for = partial(wait.wait_for, timeout=60)  # real fio runs


def text(screen: ExperimentScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


def read_ahead(device: str) -> str:
    return (Path("/sys/block") / device / "queue" / "read_ahead_kb").read_text().strip()


async def test_a_sweep_shows_each_step_plots_the_curves_and_ends_with_the_reading(
    loop: str, fio_bin: str
) -> None:
    plan = ExperimentPlan("sweep", f"/dev/{loop}", max_qd=4, step_runtime_s=1)
    app = ExperimentHost(plan, fio_bin)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen_under_test
        assert "QD sweep on /dev/" in text(screen, "#exp-title")
        await wait_for(pilot, lambda: len(screen.steps) >= 1)
        # The first step is in the table and on the plot before the sweep ends.
        assert text(screen, "#exp-table").splitlines()[1].split()[0] == "1"
        await wait_for(pilot, lambda: screen.finished)
        assert [s.qd for s in screen.steps] == [1, 2, 4]
        rows = text(screen, "#exp-table").splitlines()
        assert [r.split()[0] for r in rows[1:]] == ["1", "2", "4"]
        verdict = text(screen, "#exp-verdict").splitlines()
        assert verdict[0].startswith("90% of peak IOPS is reached at QD ")
        assert verdict[1].startswith("scaling")
        assert verdict[2].startswith("full saturation")
        iops_plot = screen.query_one("#exp-plot-iops", PlotextPlot)
        assert "IOPS vs QD" in "".join(
            iops_plot.render_line(y).text for y in range(iops_plot.size.height)
        )
        assert len(app.history) == 3  # every step is in the probe history
        await pilot.press("escape")
        await pilot.pause()
    assert isinstance(app.dismissed[0], SweepResult)
    assert app.dismissed[0].device == loop


async def test_escape_during_an_ab_cancels_it_and_restores_read_ahead(
    loop: str, fio_bin: str
) -> None:
    original = read_ahead(loop)
    plan = ExperimentPlan(
        "ab",
        f"/dev/{loop}",
        device=loop,
        setting="read_ahead_kb",
        values=("0", "1024"),
        preset="seqscan",
        rounds=3,
        runtime_s=10,
    )
    app = ExperimentHost(plan, fio_bin)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen_under_test
        await wait_for(pilot, lambda: "round 1, read_ahead_kb=0" in text(screen, "#exp-live"))
        assert read_ahead(loop) == "0"  # the A value is in force while its run goes
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.finished)
        assert read_ahead(loop) == original
        live = text(screen, "#exp-live")
        assert live.startswith("cancelled:") and f"read_ahead_kb is {original}" in live
        assert app.tuner.active == ()
        await pilot.press("escape")  # a second escape closes the screen
        await pilot.pause()
    assert app.dismissed == [None]


async def test_a_scheduler_ab_runs_to_its_verdict_and_restores(loop: str, fio_bin: str) -> None:
    scheduler = Path("/sys/block") / loop / "queue" / "scheduler"
    original = scheduler.read_text()
    # Loop queue settings outlive losetup -d, so a reused loop device may not start at "none".
    chosen = original.split("[", 1)[1].split("]", 1)[0]
    plan = ExperimentPlan(
        "ab",
        f"/dev/{loop}",
        device=loop,
        setting="scheduler",
        values=("none", "mq-deadline"),
        preset="randread",
        rounds=1,
        runtime_s=1,
    )
    app = ExperimentHost(plan, fio_bin)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen_under_test
        await wait_for(pilot, lambda: screen.finished)
        table = text(screen, "#exp-table")
        assert "mq-deadline vs none:" in table
        assert f"{loop} scheduler: original {chosen} restored" in table
        assert [r.value for r in screen.runs] == ["none", "mq-deadline"]
        assert len(app.history) == 2
        records = app.history.records
        assert dict(records[1].settings)["scheduler"] == "mq-deadline"
        await pilot.press("escape")
        await pilot.pause()
    assert scheduler.read_text() == original
    assert isinstance(app.dismissed[0], AbResult)


class SetupHost(App[None]):
    """Opens the setup modal for a device, then the run screen, as the main screen will."""

    def __init__(self, device: str, fio: str) -> None:
        super().__init__()
        self.device = device
        self.fio = fio
        self.tuner = Tuner(Roots(), Journal(None))

    def on_mount(self) -> None:
        open_experiment(self, self.tuner, ProbeRunner(Roots(), self.fio), self.device)


async def test_the_setup_modal_refuses_a_bad_spec_then_starts_the_ab(
    loop: str, fio_bin: str
) -> None:
    app = SetupHost(loop, fio_bin)
    async with app.run_test(size=(120, 40)) as pilot:
        setup = app.screen
        assert isinstance(setup, ExperimentSetupScreen)
        assert setup.query_one("#setup-target", Input).value == f"/dev/{loop}"
        what = setup.query_one("#setup-what", Input)
        what.value = "rotational=0,1"
        await pilot.press("enter")
        assert "cannot A/B 'rotational'" in str(setup.query_one("#setup-error", Static).content)
        assert app.screen is setup  # still asking
        what.value = "nr_requests=16,32"
        setup.query_one("#setup-runtime", Input).value = "1"
        setup.query_one("#setup-rounds", Input).value = "1"
        what.focus()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExperimentScreen)
        assert screen.plan.setting == "nr_requests" and screen.plan.values == ("16", "32")
        await wait_for(pilot, lambda: screen.finished)
        assert "32 vs 16:" in text(screen, "#exp-table")


def test_setup_fields_become_a_plan_or_a_one_line_error() -> None:
    plan = plan_from_fields("sda", "sweep", "/dev/sda", "randread", "2", "3", "64")
    assert (plan.kind, plan.max_qd, plan.step_runtime_s) == ("sweep", 64, 3)
    ab = plan_from_fields("sda", "scheduler=none,bfq", "/tmp", "index", "4", "5", "128")
    assert (ab.kind, ab.setting, ab.values, ab.rounds) == ("ab", "scheduler", ("none", "bfq"), 4)
    for fields, message in (
        (("sweep", "/dev/sda", "wal", "2", "3", "64"), "reads only"),
        (("sweep", "/dev/sda", "nope", "2", "3", "64"), "preset: one of"),
        (("sweep", "", "randread", "2", "3", "64"), "target"),
        (("sweep", "/dev/sda", "randread", "2", "0", "64"), "runtime: must be from 1"),
        (("sweep", "/dev/sda", "randread", "2", "3", "x"), "max QD: not a whole number"),
        (("read_ahead_kb=1", "/tmp", "seqscan", "2", "3", "64"), "at least two values"),
    ):
        with pytest.raises(ValueError, match=message):
            plan_from_fields("sda", *fields)


async def test_quitting_the_app_mid_ab_restores_the_setting(loop: str, fio_bin: str) -> None:
    original = read_ahead(loop)
    plan = ExperimentPlan(
        "ab",
        f"/dev/{loop}",
        device=loop,
        setting="read_ahead_kb",
        values=("16", "1024"),
        preset="seqscan",
        rounds=2,
        runtime_s=10,
    )
    app = ExperimentHost(plan, fio_bin)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen_under_test
        await wait_for(pilot, lambda: "read_ahead_kb=16" in text(screen, "#exp-live"))
        assert read_ahead(loop) == "16"
        app.exit()
    # The app's shutdown cancelled the worker: fio is gone and read-ahead is back.
    assert read_ahead(loop) == original
    assert app.tuner.active == ()
