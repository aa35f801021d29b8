"""Reactive state: the selection and the table's sort, filter and columns drive the views, and a
held-down arrow key reads the queue settings from sysfs once, not once per row."""

from __future__ import annotations

from collections import Counter
from dataclasses import is_dataclass

import pytest

from iotop_plus.devices import settings as settings_module
from iotop_plus.sampling.topology.inventory import hidden_by_default
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.tui.canned import canned_app
from tests.tui.helpers import burst, started, step, table, wait_for


def count_settings_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count full reads of a device's queue settings (read_ahead_kb is read once in each)."""
    reads: Counter[str] = Counter()
    real = settings_module.read_setting

    def counting(roots, device, name, **kwargs):
        if name == "read_ahead_kb":
            reads[device] += 1
        return real(roots, device, name, **kwargs)

    monkeypatch.setattr(settings_module, "read_setting", counting)
    return reads


async def test_holding_down_reads_the_settings_once_the_cursor_rests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = count_settings_reads(monkeypatch)
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        await pilot.press("a")  # every device: partitions, loop0, never-used sdc
        # The Tune tab shows the settings too: open it, then go back to the table.
        await screen.run_action("panel_tab('tab-tune')")
        await wait_for(pilot, lambda: screen.panels.settings_panel.is_mounted)
        table(app).focus()
        await pilot.press("home")
        names = table(app).visible_names()
        assert len(names) == 9
        # Home selects the first row: wait for its own read, not an earlier one still counted
        # (under load the read of the row selected before could pass for it).
        await wait_for(pilot, lambda: settled(app, names[0]), f"the settings of {names[0]}")
        reads.clear()

        # A held-down key: every press queued before the first is handled, down and back up.
        await burst(pilot, *["down"] * 8, *["up"] * 8, *["down"] * 8)
        last = names[-1]
        assert screen.selected_device == last
        await wait_for(pilot, lambda: "read_ahead_kb: 128" in screen.query_one(DevicePanel).text)
        await wait_for(pilot, lambda: any("read-ahead" in s for s in _tune_lines(screen)))
        # No late read: the last row's read is shown, so every rest timer set on the way has
        # fired (each was set before it); a frame after the rest reads nothing either; and no
        # read still runs in a worker.
        await step(pilot, app)
        await wait_for(pilot, lambda: settled(app, last), "no settings read still running")
        assert reads == Counter({last: 1}), reads
        panel_text = screen.query_one(DevicePanel).text
        assert f"device: /dev/{last}" in panel_text
        assert f"Queue settings of {last}" in screen.panels.settings_panel.text


def settled(app: IotopPlusApp, name: str) -> bool:
    """The settings of ``name`` are read and shown, and no read runs in a worker."""
    screen = app.main_screen
    read = screen.selection.settings
    shown = read is not None and read[0] == name
    return shown and screen.selected_device == name and len(app.workers) == 0


def _tune_lines(screen) -> tuple[str, ...]:
    return screen.panels.settings_panel.shown_lines


async def test_setting_the_selected_device_updates_the_panel_and_the_cursor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = count_settings_reads(monkeypatch)
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        screen = app.main_screen
        assert screen.selected_device == "nvme0n1"  # the busiest starts selected
        screen.selected_device = "sdb"  # a reactive: its watcher does the rest
        panel = screen.query_one(DevicePanel)
        assert "device: /dev/sdb" in panel.text  # at once
        assert table(app).selected == "sdb"  # the table's cursor follows
        await wait_for(pilot, lambda: "nr_requests: 64 requests" in panel.text)
        assert reads["sdb"] == 1


async def test_the_tables_sort_and_filter_are_reactives_that_relayout() -> None:
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        t = table(app)
        names = t.visible_names()
        t.sort_reverse = True
        assert t.visible_names() == names[::-1]
        t.name_filter = "sd"
        assert set(t.visible_names()) == {"sda", "sda1", "sda2", "sdb", "sdc"}
        assert t.visible_names()[0] == "sdc"  # still reversed
        t.name_filter = ""
        usual = set(t.visible_names())
        assert usual and not any(hidden_by_default(n) for n in usual)
        t.show_all = True
        shown = set(t.visible_names())
        assert usual < shown and any(hidden_by_default(n) for n in shown - usual)
        basic = [c.key for c in t.columns]
        t.column_set = "extended"
        assert "rrqm_s" in [c.key for c in t.columns] and "rrqm_s" not in basic


async def test_dataclass_messages_are_initialised_and_reach_their_handlers() -> None:
    from iotop_plus.tui.widgets.process_panel import ProcessPanel

    message = ProcessPanel.ShownChanged(True)
    assert is_dataclass(message) and message.time > 0 and not message.is_forwarded
    assert message == ProcessPanel.ShownChanged(True)
    app = canned_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await started(pilot, app)
        app.main_screen.post_message(ProcessPanel.ShownChanged(True))
        await wait_for(pilot, lambda: app.main_screen.has_class("processes-shown"))
