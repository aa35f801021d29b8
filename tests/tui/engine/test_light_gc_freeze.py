"""#25: once the main screen is up, the console script's run moves the start's objects to the
collector's permanent generation, so a full collection no longer scans them, collects the
young generation less often (a frame makes no garbage cycles) and trims the C heap once a
minute; tests' apps do none of it (the test process would keep every app before it)."""

from __future__ import annotations

import argparse
import gc
from pathlib import Path

import pytest

from iotop_plus import cli
from iotop_plus.config import Config
from iotop_plus.tui import run
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.engine.gc_policy import GEN0_THRESHOLD, TRIM_EVERY_S, heap_trimmer
from tests.tui.canned import HOST_ROOTS, canned_app
from tests.tui.helpers import parts_up, started

pytestmark = pytest.mark.usefixtures("step_clock")


async def test_the_start_is_frozen_once_the_parts_are_up_when_asked() -> None:
    app = canned_app(Config(interval=1.0), with_history=False)
    app.main_screen.later.freeze_gc = True
    before, threshold = gc.get_freeze_count(), gc.get_threshold()
    gc.disable()  # as the console script's start holds it
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await started(pilot, app)
            await parts_up(pilot, app)
            assert gc.isenabled()  # on again, the start's garbage collected before the freeze
            assert gc.get_freeze_count() > before + 10_000
            assert gc.get_threshold() == (GEN0_THRESHOLD, *threshold[1:])
            timer = app.main_screen.later.trim_timer
            assert timer is not None and timer.name == "heap-trim"
            assert timer._interval == TRIM_EVERY_S
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*threshold)


async def test_an_app_not_asked_freezes_nothing() -> None:
    app = canned_app(Config(interval=1.0), with_history=False)
    before, threshold = gc.get_freeze_count(), gc.get_threshold()
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await parts_up(pilot, app)
        assert gc.get_freeze_count() == before
        assert gc.get_threshold() == threshold
        assert app.main_screen.later.trim_timer is None


def test_the_console_scripts_run_asks_for_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[bool] = []

    def no_run(self: IotopPlusApp) -> int:
        asked.append(self.main_screen.later.freeze_gc)
        return 0

    monkeypatch.setattr(IotopPlusApp, "run", no_run)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    args = argparse.Namespace(state_dir=str(tmp_path / "state"))
    assert run.run_tui(args, HOST_ROOTS) == 0
    assert asked == [True]


def test_the_heap_trim_gives_free_pages_back_on_this_glibc() -> None:
    import ctypes

    trim = heap_trimmer()
    assert trim is not None  # Debian's glibc has malloc_trim
    blocks = [ctypes.create_string_buffer(100_000) for _ in range(50)]  # 5 MB, not mmap()ed
    del blocks[:-1]  # freed below the last one: the heap's top cannot shrink past it
    assert trim() == 1  # glibc: 1 when memory was given back


def test_the_console_script_holds_the_collector_off_through_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[bool] = []

    def no_run(self: IotopPlusApp) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(IotopPlusApp, "run", no_run)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    roots = ["--proc-root", str(HOST_ROOTS.proc), "--sys-root", str(HOST_ROOTS.sys)]
    assert gc.isenabled()
    assert cli.main([*roots, "--state-dir", str(tmp_path / "state")]) == 0
    assert seen == [False]  # (the screen turns it on once it is up: the test above)
    assert gc.isenabled()  # and the end of the run, whatever came first
