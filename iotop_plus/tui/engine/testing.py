"""The test lane's hooks into Textual: the only place tests reach its private parts.

- :func:`switch` turns the engine on or off for one test (the ``engine_mode`` fixture runs a
  test both ways).
- :func:`short_idle_window` shortens Pilot's idle check (``textual._wait``), only while the
  engine is on: on stock Textual the lane runs with Textual's own window, slower.
- :func:`on_paint`, :func:`on_display`, :func:`compositor_of`, :func:`screen_lines`,
  :func:`after_close_all`, :func:`on_styled_render` and :func:`render_through_styles` watch
  or drive Textual's paint and exit for a test: these work whether the engine is on or off.

Never imported by the app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from iotop_plus.tui import engine

if TYPE_CHECKING:
    import pytest


def switch(monkeypatch: pytest.MonkeyPatch, *, stock: bool) -> None:
    """Stock Textual (``stock``) or the engine, for the rest of the test."""
    if stock:
        monkeypatch.setenv(engine.STOCK_ENV, "1")
    else:
        monkeypatch.delenv(engine.STOCK_ENV, raising=False)


def short_idle_window(monkeypatch: pytest.MonkeyPatch, window_s: float) -> bool:
    """Pilot's idle check looks at ``window_s`` windows, with Textual's rule (the same share
    of CPU time in the window), while the engine is on; whether it was shortened."""
    if not engine.active():
        return False
    import textual._wait as wait

    ratio = wait.SLEEP_IDLE / wait.SLEEP_GRANULARITY
    monkeypatch.setattr(wait, "SLEEP_GRANULARITY", window_s)
    monkeypatch.setattr(wait, "SLEEP_IDLE", window_s * ratio)
    return True


def on_paint(monkeypatch: pytest.MonkeyPatch, seen: Callable[[Screen[Any]], None]) -> None:
    """Call ``seen(screen)`` at each paint of any screen, before Textual paints it."""
    paint = Screen._compositor_refresh

    def counting_paint(self: Screen[Any]) -> None:
        seen(self)
        paint(self)

    monkeypatch.setattr(Screen, "_compositor_refresh", counting_paint)


def on_display(app: App[Any], shown: Callable[[object], None]) -> None:
    """Call ``shown(update)`` with every update ``app`` writes on its terminal (a full
    layout or a partial one, rich renderables with cursor moves), as it writes it."""
    display = app._display

    def watched(screen: Screen[Any], renderable: Any) -> None:
        if renderable is not None:
            shown(renderable)
        display(screen, renderable)

    app._display = watched  # type: ignore[method-assign]


def compositor_of(screen: Screen[Any]) -> object:
    """The compositor ``screen`` paints with."""
    return screen._compositor


def screen_lines(screen: Screen[Any]) -> list[str]:
    """Every line ``screen`` shows now, as plain text."""
    return [strip.text for strip in screen._compositor.render_strips()]


def after_close_all(app: App[Any], then: Callable[[], object]) -> None:
    """Call ``then()`` once ``app`` has closed its screens at exit, before it handles what is
    left in its queue."""
    close_all = app._close_all

    async def close_all_then() -> None:
        await close_all()
        then()

    app._close_all = close_all_then  # type: ignore[method-assign]


def on_styled_render(monkeypatch: pytest.MonkeyPatch, seen: Callable[[Widget], None]) -> None:
    """Call ``seen(widget)`` whenever Textual paints a widget through its styles cache."""
    from textual._styles_cache import StylesCache

    real = StylesCache.render_widget

    def render_widget(self: StylesCache, widget: Widget, crop: Region) -> list[Strip]:
        seen(widget)
        return real(self, widget, crop)

    monkeypatch.setattr(StylesCache, "render_widget", render_widget)


def render_through_styles(widget: Widget, crop: Region) -> list[Strip]:
    """The lines of ``crop`` as Textual's own path paints them (every line rendered again)."""
    widget._styles_cache.clear()
    return Widget.render_lines(widget, crop)
