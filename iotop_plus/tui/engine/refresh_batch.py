"""A frame's repaints handed to the screen at once, not each through its widget's queue.

In Textual, a widget's ``refresh()`` posts a ``Prompt`` to that widget's own message queue;
its task wakes, looks up and runs its idle handlers, and posts an ``Update`` to the screen,
whose task wakes in turn to note the widget as dirty and start its update timer. A frame of
the main screen repaints about nine widgets (the five charts, the caption, the table, the
header and the Device tab's facts): some twenty messages dispatched and sixteen task wake-ups
a second, counted in the live TUI, for what comes down to adding nine widgets to a set.

Inside :func:`one_update`, the widgets that mix in :class:`BatchedRepaint` keep their
repaints; when the block ends, each one that asked for a repaint and nothing else goes
straight into the screen's set of dirty widgets, as its idle handler would have put it, and
the screen is prompted once. Anything else (a layout, a scroll, new styles, a widget not
mounted yet or on another screen) takes Textual's own way. So does everything when the engine
is off (:func:`iotop_plus.tui.engine.active`) or this Textual lacks the private parts used here
(:func:`fits`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

from textual.dom import NoScreen
from textual.screen import Screen
from textual.widget import Widget

from iotop_plus.tui import engine

_batch: list[Widget] | None = None
"""The widgets whose repaints wait for the end of :func:`one_update` (None: not in one)."""

_OTHER_WORK = (
    "_layout_required",
    "_scroll_required",
    "_refresh_styles_required",
    "_recompose_required",
)
"""A widget's flags for work its idle handler does besides a repaint."""


class BatchedRepaint:
    """Mixin (before the Textual class) for widgets repainted at every frame."""

    def check_idle(self) -> None:
        if _batch is not None:
            _batch.append(cast(Widget, self))  # (mixed into a Widget)
            return
        super().check_idle()  # type: ignore[misc]


def fits(screen: Screen[object]) -> bool:
    """Whether this Textual has the private parts the hand-over uses (Textual 8.2)."""
    return isinstance(getattr(screen, "_dirty_widgets", None), set) and all(
        isinstance(getattr(screen, name, None), bool)
        for name in (*_OTHER_WORK, "_repaint_required", "_is_mounted", "_closing")
    )


@contextmanager
def one_update(screen: object) -> Iterator[None]:
    """Collect the repaints asked for in the block; hand them to ``screen`` at its end."""
    global _batch
    if (
        _batch is not None
        or not isinstance(screen, Screen)
        or not engine.active()
        or not fits(screen)
    ):
        yield  # nested (the outer block hands them over), or Textual's own way
        return
    batch: list[Widget] = []
    _batch = batch
    try:
        yield
    finally:
        _batch = None
        hand_over(screen, batch)


def _screen_of(widget: Widget) -> Screen[object] | None:
    try:
        return widget.screen
    except NoScreen:
        return None


def hand_over(screen: Screen[object], widgets: list[Widget]) -> None:
    """Mark each of ``widgets`` that only needs a repaint dirty on ``screen``, as
    ``Widget._check_refresh`` and ``Screen._on_update`` would, and prompt the screen once;
    prompt the others as Textual does."""
    dirty = False
    shown = screen in screen._compositor
    for widget in dict.fromkeys(widgets):
        if (
            shown
            and widget._repaint_required
            and widget._is_mounted
            and not widget._closing
            and not any(getattr(widget, name, True) for name in _OTHER_WORK)
            and _screen_of(widget) is screen
        ):
            widget._repaint_required = False
            if widget.display:
                screen._dirty_widgets.add(widget)
                dirty = True
        else:
            widget.check_idle()
    if dirty:
        screen.check_idle()
