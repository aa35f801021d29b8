"""A strip makes its caches only when one is first used (Textual's ``__init__`` made all seven
for every strip), and gives the same results as Textual's; with the engine off, strips are
Textual's own again."""

from __future__ import annotations

import pytest
from rich.segment import Segment
from rich.style import Style
from rich.terminal_theme import DEFAULT_TERMINAL_THEME
from textual.color import Color
from textual.filter import ANSIToTruecolor
from textual.strip import Strip

from iotop_plus.tui.engine import strip_cycles
from iotop_plus.tui.engine.testing import switch

RED = Style(color="red")
CACHES = sorted(strip_cycles._SIZES)


def _made() -> list[str]:
    """The caches a fresh strip holds."""
    strip = Strip([Segment("abc"), Segment("de", RED)])
    return [name for name in CACHES if name in dir(strip) and _is_set(strip, name)]


def _is_set(strip: Strip, name: str) -> bool:
    try:
        object.__getattribute__(strip, name)
    except AttributeError:
        return False
    return True


def test_a_new_strip_holds_no_cache_until_one_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    switch(monkeypatch, stock=False)
    strip_cycles.install()
    assert len(CACHES) == 7 and _made() == []
    ours = Strip([Segment("abcdef"), Segment("gh", RED)])
    textuals = Strip.__new__(Strip)
    strip_cycles._INIT(textuals, [Segment("abcdef"), Segment("gh", RED)])
    assert _is_set(textuals, "_crop_cache") and not _is_set(ours, "_crop_cache")
    for call in (
        lambda s: s.crop(1, 5),
        lambda s: s.divide([2, 6]),
        lambda s: s.apply_style(RED),
        lambda s: s.apply_filter(ANSIToTruecolor(DEFAULT_TERMINAL_THEME), Color(0, 0, 0)),
        lambda s: s.extend_cell_length(12),
        lambda s: s.crop_extend(2, 11, None),
        lambda s: s.simplify(),
    ):
        got, want = call(ours), call(textuals)
        assert [list(s) for s in _listed(got)] == [list(s) for s in _listed(want)]
        assert call(ours) == got  # again: from the cache it made
    assert _is_set(ours, "_crop_cache") and _is_set(ours, "_divide_cache")


def _listed(result: Strip | list[Strip]) -> list[Strip]:
    return result if isinstance(result, list) else [result]


def test_with_the_engine_off_strips_are_textuals_own(monkeypatch: pytest.MonkeyPatch) -> None:
    switch(monkeypatch, stock=True)
    strip_cycles.install()
    try:
        assert _made() == CACHES
    finally:
        switch(monkeypatch, stock=False)
        strip_cycles.install()  # (as the next app of this process would)
    assert _made() == []
