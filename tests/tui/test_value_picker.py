"""The value picker answers keys typed in one burst right after it opens.

A user who knows the list presses R, Down, Enter without waiting; over SSH (or pasted) those
keys arrive together, before the new screen has set its focus. None may be lost.
"""

from __future__ import annotations

from textual.binding import Binding

from iotop_plus.tui.screens.settings_modals import ValuePickerScreen
from iotop_plus.tui.type_ahead import TypeAheadApp
from tests.tui.helpers import burst

OPTIONS = (("zero", "0"), ("sixteen", "16"), ("one-two-eight", "128"))


def accept(text: str) -> str:
    return text


class Host(TypeAheadApp[None]):
    BINDINGS = [Binding("R", "pick", "Pick")]

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str | None] = []

    def action_pick(self) -> None:
        picker = ValuePickerScreen("loop3 read-ahead", "0..4096 KiB", OPTIONS, accept, current="0")
        self.push_screen(picker, self.answers.append)


async def test_down_and_enter_typed_with_the_opening_key_pick_the_next_value() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await burst(pilot, "R", "down", "enter")
        await pilot.pause()
        assert app.answers == ["16"]
        assert not isinstance(app.screen, ValuePickerScreen)


async def test_escape_typed_with_the_opening_key_closes_it() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await burst(pilot, "R", "escape")
        await pilot.pause()
        assert app.answers == [None]
        assert not isinstance(app.screen, ValuePickerScreen)


async def test_digits_typed_while_the_list_has_focus_are_all_kept() -> None:
    """The first digit moves focus to the input; the input must not then select that digit,
    or the second one replaces it ("16" became "6", and read-ahead went to 6 KiB)."""
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("R")
        await pilot.pause()
        await pilot.press("1", "6", "enter")
        await pilot.pause()
        assert app.answers == ["16"]


async def test_digits_typed_with_the_opening_key_are_all_kept() -> None:
    app = Host()
    async with app.run_test(size=(80, 24)) as pilot:
        await burst(pilot, "R", "4", "0", "9", "6", "enter")
        await pilot.pause()
        assert app.answers == ["4096"]
