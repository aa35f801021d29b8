"""One gate on the tested Textual versions and one switch to stock Textual: with the engine
off (``IOTOP_PLUS_STOCK_TEXTUAL=1``, or a Textual it was not tested on) every part takes
Textual's own way, and one line on stderr says so."""

from __future__ import annotations

import io

import pytest
from textual._compositor import Compositor
from textual.drivers.headless_driver import HeadlessDriver
from textual.drivers.linux_driver import LinuxDriver
from textual.strip import Strip

from iotop_plus.config import Config
from iotop_plus.tui import engine
from iotop_plus.tui.engine import strip_cycles
from iotop_plus.tui.engine.compositor import DirtyOnlyCompositor
from iotop_plus.tui.engine.input_driver import QuietInputDriver, quiet_driver
from iotop_plus.tui.engine.testing import compositor_of, switch
from tests.tui.canned import canned_app
from tests.tui.helpers import started


def test_the_installed_textual_is_a_tested_one_and_pyproject_pins_it() -> None:
    from pathlib import Path

    import tomllib

    assert engine.tested(), engine.textual_version()
    project = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    pins = [
        dep
        for dep in project["project"]["dependencies"]
        if dep.startswith(("textual=", "textual>", "textual<"))
    ]
    assert pins == [f"textual=={version}" for version in engine.TESTED_TEXTUAL]


def test_the_switch_turns_the_engine_off_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    switch(monkeypatch, stock=False)
    assert engine.active() and engine.notice() is None
    stream = io.StringIO()
    engine.announce(stream)
    assert stream.getvalue() == ""
    for value, off in (("1", True), ("0", False), ("", False), ("yes", True)):
        monkeypatch.setenv(engine.STOCK_ENV, value)
        assert engine.active() is not off, value
    monkeypatch.setenv(engine.STOCK_ENV, "1")
    engine.announce(stream)
    assert stream.getvalue() == (
        "iotop-plus: IOTOP_PLUS_STOCK_TEXTUAL is set: running on stock Textual (slower paint)\n"
    )


def test_an_untested_textual_runs_stock_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    switch(monkeypatch, stock=False)
    monkeypatch.setattr(engine, "textual_version", lambda: "8.3.0")
    assert not engine.tested() and not engine.active()
    line = engine.notice()
    assert line == (
        "iotop-plus: Textual 8.3.0 is not a tested version (8.2.8): "
        "running on stock Textual (slower paint)"
    )


@pytest.mark.parametrize("stock", [False, True], ids=["engine", "stock"])
async def test_each_part_follows_the_switch(monkeypatch: pytest.MonkeyPatch, stock: bool) -> None:
    switch(monkeypatch, stock=stock)
    app = canned_app(Config(interval=1.0), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        used = compositor_of(app.main_screen)
        assert type(used) is (Compositor if stock else DirtyOnlyCompositor)
        assert (Strip.divide is strip_cycles._DIVIDE) is stock
        assert (quiet_driver(LinuxDriver) is QuietInputDriver) is not stock
        assert quiet_driver(HeadlessDriver) is HeadlessDriver
    switch(monkeypatch, stock=False)
    strip_cycles.install()  # (as the next app of this process would)
