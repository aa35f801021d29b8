"""On a Textual without ``Screen.bindings_updated_signal`` the key hints still follow the
bindings, by looking at them on a timer (:mod:`iotop_plus.tui.engine.bindings`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.screen import Screen

from iotop_plus.config import Config
from iotop_plus.tui.engine import bindings
from iotop_plus.tui.widgets.key_hints import KeyHints
from tests.tui.canned import canned_app
from tests.tui.helpers import started, wait_for

pytestmark = pytest.mark.real_clock("the hints' poll runs on the app's timer")


async def test_the_hints_follow_the_bindings_without_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    polled: list[Screen[object]] = []
    real = bindings.watch_bindings

    def without_signal(widget: KeyHints, changed: Callable[[Screen[object]], None]) -> None:
        monkeypatch.setattr(type(widget.screen), "bindings_updated_signal", None, raising=False)
        screen = widget.screen
        saved = screen.__dict__.pop("bindings_updated_signal", None)
        try:

            def seen(screen: Screen[object]) -> None:
                polled.append(screen)
                changed(screen)

            real(widget, seen)
        finally:
            if saved is not None:
                screen.__dict__["bindings_updated_signal"] = saved

    monkeypatch.setattr("iotop_plus.tui.widgets.key_hints.watch_bindings", without_signal)
    app = canned_app(Config(interval=1.0), with_history=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        hints = app.main_screen.query_one(KeyHints)
        await wait_for(pilot, lambda: len(polled) >= 2, "two polls of the bindings")
        assert any(hint.action == "quit" for hint in hints.hints)
        await pilot.press("p")  # the Processes tab: its keys come into the hints
        await wait_for(pilot, lambda: any(h.key == "t" for h in hints.hints), "the tab's keys")
