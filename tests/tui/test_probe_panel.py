"""The Probe tab in a small host app: a real probe from the panel, live, then the card."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path

import psutil
import pytest
from rich.console import Console
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Button, Input, OptionList, Static

from iotop_plus.probe.runner import ProbeRunner
from iotop_plus.roots import Roots
from iotop_plus.tui.widgets.probe_panel import ProbePanel
from tests.support import wait

pytestmark = [pytest.mark.slow]


class ProbeHost(App[None]):
    """Just the panel, as the side panel will hold it."""

    def __init__(self, fio: str) -> None:
        super().__init__()
        self.fio = fio
        self.live_texts: list[str] = []

    def compose(self) -> ComposeResult:
        yield ProbePanel(lambda: ProbeRunner(Roots(), self.fio), Roots(), id="probe")

    def on_probe_panel_progress(self, message: ProbePanel.Progress) -> None:
        # The panel has updated its live line by now (it handles the message first).
        self.live_texts.append(_text(self, "#probe-live"))


_wait_for = partial(wait.wait_for, timeout=60)  # real fio runs


def _text(app: App, selector: str) -> str:
    """What the Static shows, as plain text (Rich tables included)."""
    content = app.query_one(selector, Static).content
    if isinstance(content, str):
        return content
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


async def _fill(pilot, app: App, selector: str, value: str) -> None:
    field = app.query_one(selector, Input)
    field.value = value
    await pilot.pause()


async def test_a_probe_from_the_panel_shows_live_progress_then_the_result_card(
    tmp_path: Path, fio_bin: str
) -> None:
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 80)) as pilot:
        panel = app.query_one(ProbePanel)
        presets = app.query_one("#probe-presets", OptionList)
        presets.focus()
        await pilot.press("home", "down")  # wal -> index
        assert panel.preset.name == "index"
        assert "B-tree lookups" in _text(app, "#probe-rationale")
        assert app.query_one("#probe-param-numjobs", Input).value == "8"
        await _fill(pilot, app, "#probe-param-runtime", "3")
        await _fill(pilot, app, "#probe-param-size", "32")
        await _fill(pilot, app, "#probe-target", str(tmp_path))
        presets.focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: bool(app.live_texts))
        assert "IOPS" in app.live_texts[0] and "s left" in app.live_texts[0]
        assert any(p.name.startswith(".iotop-plus-") for p in tmp_path.iterdir())
        await _wait_for(pilot, lambda: len(panel.history) == 1)
        await pilot.pause()
        card = _text(app, "#probe-card")
        for text in ("Index lookups", "IOPS", "clat µs", "p99.99", "quick probe", "reference"):
            assert text in card
        assert list(tmp_path.iterdir()) == []
        record = panel.history.get(1)
        assert record is not None and record.result.preset == "index"
        assert dict(record.settings).get("read_ahead_kb")  # settings in force were kept
        history = app.query_one("#probe-history", OptionList)
        assert history.option_count == 1
        if record.result.device is not None:  # the device side was timed, or a note says why
            if os.geteuid() == 0 and shutil.which("bpftrace"):
                assert "device µs" in card and "p99.9" in card, card
            else:
                assert "device-side latency not traced" in card, card


async def test_cancel_from_the_panel_leaves_no_file(tmp_path: Path, fio_bin: str) -> None:
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 80)) as pilot:
        panel = app.query_one(ProbePanel)
        await _fill(pilot, app, "#probe-param-runtime", "60")
        await _fill(pilot, app, "#probe-param-size", "32")
        await _fill(pilot, app, "#probe-target", str(tmp_path))
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: bool(app.live_texts))
        await pilot.press("x")
        await _wait_for(pilot, lambda: not panel.running)
        await pilot.pause()
        assert "cancelled" in _text(app, "#probe-error")
        assert list(tmp_path.iterdir()) == []


async def test_errors_are_plain_and_the_app_keeps_running(tmp_path: Path, fio_bin: str) -> None:
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 80)) as pilot:
        panel = app.query_one(ProbePanel)
        await _fill(pilot, app, "#probe-target", str(tmp_path / "missing"))
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: "does not exist" in _text(app, "#probe-error"))
        assert not (tmp_path / "missing").exists()
        await _fill(pilot, app, "#probe-param-bs", "4q")
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "not a block size" in _text(app, "#probe-error")
        assert not panel.running and app.is_running


@pytest.mark.root
async def test_a_write_probe_on_a_raw_device_asks_for_its_name_then_runs(
    make_loop: Callable[..., str], fio_bin: str
) -> None:
    dev = make_loop(size_mb=64)
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 80)) as pilot:
        panel = app.query_one(ProbePanel)
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("home")  # wal: writes
        assert panel.preset.name == "wal"
        await _fill(pilot, app, "#probe-param-runtime", "1")
        await _fill(pilot, app, "#probe-target", f"/dev/{dev}")
        app.query_one("#probe-target", Input).focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: "type the device name" in _text(app, "#probe-error"))
        confirm = app.query_one("#probe-confirm", Input)
        assert confirm.display and confirm.has_focus
        await pilot.press(*dev, "enter")
        await _wait_for(pilot, lambda: len(panel.history) == 1)
        record = panel.history.get(1)
        assert record is not None and record.result.fsync is not None
        assert record.result.device == dev


async def test_quitting_the_app_during_a_probe_stops_fio_and_removes_the_file(
    tmp_path: Path, fio_bin: str
) -> None:
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 80)) as pilot:
        await _fill(pilot, app, "#probe-param-runtime", "60")
        await _fill(pilot, app, "#probe-param-size", "32")
        await _fill(pilot, app, "#probe-target", str(tmp_path))
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: bool(app.live_texts))
        assert any(p.name.startswith(".iotop-plus-") for p in tmp_path.iterdir())
        app.exit()
    assert list(tmp_path.iterdir()) == []
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(str(tmp_path) in a for a in (p.info["cmdline"] or []))
    ]


async def test_s_no_longer_starts_a_probe_enter_on_the_preset_does(
    tmp_path: Path, fio_bin: str
) -> None:
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 80)) as pilot:
        panel = app.query_one(ProbePanel)
        await _fill(pilot, app, "#probe-param-runtime", "60")
        await _fill(pilot, app, "#probe-param-size", "32")
        await _fill(pilot, app, "#probe-target", str(tmp_path))
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.press("s")  # one Shift from S (scheduler): must do nothing here
        # press returns once the screen and every widget have handled the key, and a start
        # makes the panel running in that same handler (its worker starts fio later).
        assert not panel.running and list(tmp_path.iterdir()) == []
        assert [w for w in app.workers if w.group == "probe"] == []
        await pilot.press("enter")
        await _wait_for(pilot, lambda: panel.running)
        await pilot.press("x")
        await _wait_for(pilot, lambda: not panel.running)
        await pilot.pause()
        assert list(tmp_path.iterdir()) == []


async def test_a_refusal_below_the_fold_is_scrolled_into_view(tmp_path: Path, fio_bin: str) -> None:
    # "Probe results and refusals appear below the fold": at 24 lines the error line sits
    # far below the presets; it must be brought into view, not left unseen.
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(60, 24)) as pilot:
        panel = app.query_one(ProbePanel)
        await _fill(pilot, app, "#probe-target", str(tmp_path / "missing"))
        app.query_one("#probe-presets", OptionList).focus()
        await pilot.pause()
        before = panel.scroll_y
        await pilot.press("enter")
        await _wait_for(pilot, lambda: "does not exist" in _text(app, "#probe-error"))
        error = app.query_one("#probe-error", Static)

        def in_view() -> bool:
            top = panel.scroll_y
            return top <= error.virtual_region.y < top + panel.scrollable_content_region.height

        await _wait_for(pilot, in_view)  # scrolled to the refusal (not a fixed settle)
        assert panel.scroll_y > before


def test_a_cancelled_device_probe_does_not_claim_a_probe_file() -> None:
    from iotop_plus.probe.target import ProbeTarget
    from iotop_plus.tui.widgets.probe_panel import cancelled_text

    device = ProbeTarget("device", None, Path("/dev/loop9"), "loop9", 1 << 20, True)
    directory = ProbeTarget("file", Path("/tmp"), None, None, 1 << 20, False)
    assert "probe file" not in cancelled_text(device)
    assert cancelled_text(directory) == "fio stopped, probe file removed"


#: The key a button's label names, as Textual spells it.
_KEY_OF_LABEL = {"⏎": "enter"}
#: What each button does when pressed (its Button.Pressed handler).
_BUTTON_ACTIONS = {
    "probe-start": "start",
    "probe-cancel": "cancel",
    "probe-use-device": "use_device",
}


async def test_each_probe_button_names_the_key_that_does_the_same() -> None:
    # #22 item 12: the "Start s" button had no s key (Enter starts, by the rulings).
    app = ProbeHost("fio")
    async with app.run_test(size=(60, 80)) as pilot:
        await pilot.pause()
        panel = app.query_one(ProbePanel)
        keys = {b.key: b.action for b in panel.BINDINGS if isinstance(b, Binding)}
        for button in app.query("#probe-buttons Button").results(Button):
            assert button.id is not None
            named = str(button.label).split()[-1]
            key = _KEY_OF_LABEL.get(named, named)
            assert keys.get(key) == _BUTTON_ACTIONS[button.id], (str(button.label), keys)
        assert "s" not in keys


async def test_the_durability_plan_runs_from_the_panel_method_by_method(
    tmp_path: Path, fio_bin: str
) -> None:
    app = ProbeHost(fio_bin)
    async with app.run_test(size=(80, 80)) as pilot:
        panel = app.query_one(ProbePanel)
        presets = app.query_one("#probe-presets", OptionList)
        presets.focus()
        await pilot.press("end")  # the plan is the last choice
        assert panel.durability
        assert "wal_sync_method" in _text(app, "#probe-rationale")
        assert app.query_one("#probe-param-runtime", Input).value == "2"
        await _fill(pilot, app, "#probe-param-runtime", "1")
        await _fill(pilot, app, "#probe-target", str(tmp_path))
        presets.focus()
        await pilot.press("enter")
        await _wait_for(pilot, lambda: "fdatasync x1" in _text(app, "#probe-card"))
        await wait.wait_for(pilot, lambda: "Durability" in _text(app, "#probe-card"), timeout=120)
        card = _text(app, "#probe-card")
        for text in ("open_datasync x1", "open_sync x2", "etcd x1", "write cache"):
            assert text in card
        assert len(panel.history) == 9  # each method's run, tagged with the plan
        assert list(tmp_path.iterdir()) == []
        await pilot.press("home")  # back to a preset: its own parameters again
        assert not panel.durability and panel.preset.name == "wal"
        assert app.query_one("#probe-param-runtime", Input).value == "10"
