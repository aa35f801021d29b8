"""#17 item 12: "The experiment dialog has unlabelled inputs (3, 128, 2). The A/B chart mixes
units." Every box has a label beside it; A/B plots name the setting and the axis unit."""

from __future__ import annotations

from rich.text import Text
from textual.app import App
from textual.widgets import Input, Label
from textual_plotext import PlotextPlot

from iotop_plus.devices.tuner import Tuner
from iotop_plus.probe.experiment_plans import AbRun
from iotop_plus.roots import Roots
from iotop_plus.tui.screens.experiments import (
    ExperimentPlan,
    ExperimentScreen,
    ExperimentSetupScreen,
)


async def test_every_setup_box_has_a_visible_label_beside_it() -> None:
    app: App[None] = App()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(ExperimentSetupScreen("loop0"))
        await pilot.pause()
        screen = app.screen
        for field_id, label, _ in ExperimentSetupScreen.FIELDS:
            box = screen.query_one(f"#setup-{field_id}", Input)
            beside = box.parent.query_one(Label) if box.parent is not None else None
            assert beside is not None and str(beside.content) == label
            assert beside.region.width > 0 and beside.region.y == box.region.y


class _Idle(ExperimentScreen):
    def on_mount(self) -> None:  # no fio: the test feeds runs itself
        pass


def _run(round_no: int, value: str, iops: float) -> AbRun:
    return AbRun(round_no, value, value, iops, iops * 4, 250.0, 900.0, 1000, 1000)


async def test_ab_plots_name_the_setting_and_the_round_axis() -> None:
    plan = ExperimentPlan("ab", "/dev/loop0", "loop0", "read_ahead_kb", ("0", "1024"))
    screen = _Idle(Tuner(Roots(), None, is_root=False), None, plan)  # type: ignore[arg-type]
    app: App[None] = App()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.push_screen(screen)
        await pilot.pause()
        screen.runs = [_run(1, "0", 900), _run(1, "1024", 1500), _run(2, "0", 950)]
        screen._draw_ab()
        await pilot.pause()
        drawn = Text.from_ansi(screen.query_one("#exp-plot-iops", PlotextPlot).plt.build()).plain
        assert "read_ahead_kb=0" in drawn and "read_ahead_kb=1024" in drawn
        assert "round" in drawn
