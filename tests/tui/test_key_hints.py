"""The key-hints line: the focused widget's keys, redrawn on focus changes, clickable."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget

from iotop_plus.tui.widgets.key_hints import Hint, KeyHints, fitting, hint_width


class Pane(Widget, can_focus=True):
    DEFAULT_CSS = "Pane { height: 3; }"

    def __init__(self, key: str, description: str, id: str) -> None:
        super().__init__(id=id)
        self._bindings.bind(key, f"app.pressed('{key}')", description)


class Host(App[None]):
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("z", "pressed('z')", "Hidden", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.presses: list[str] = []

    def compose(self) -> ComposeResult:
        yield Pane("t", "Threads", id="left")
        yield Pane("d", "Details", id="right")
        yield KeyHints(id="hints")

    def action_pressed(self, key: str) -> None:
        self.presses.append(key)


def line(app: Host) -> str:
    return str(app.query_one(KeyHints).render())


async def test_hints_follow_focus_and_hide_unshown_keys() -> None:
    app = Host()
    async with app.run_test(size=(80, 10)) as pilot:
        app.query_one("#left").focus()
        await pilot.pause()
        shown = line(app)
        assert " t Threads " in shown and " q Quit " in shown
        assert "Details" not in shown and "Hidden" not in shown
        assert shown.rstrip().endswith("palette")  # the command palette key, at the right
        app.query_one("#right").focus()
        await pilot.pause()
        shown = line(app)
        assert " d Details " in shown and "Threads" not in shown


async def test_clicking_a_hint_presses_its_key() -> None:
    app = Host()
    async with app.run_test(size=(80, 10)) as pilot:
        app.query_one("#left").focus()
        await pilot.pause()
        shown = line(app)
        await pilot.click(KeyHints, offset=(shown.index("Threads"), 0))
        await pilot.pause()
        assert app.presses == ["t"]
        await pilot.click(KeyHints, offset=(len(shown.rstrip()) - 30, 0))  # empty middle
        await pilot.pause()
        assert app.presses == ["t"]


def test_a_narrow_line_drops_hints_from_the_end_but_keeps_help_and_quit() -> None:
    hints = tuple(
        Hint(key, key, description, True, action)
        for key, description, action in [
            ("space", "Pause", "pause"),
            ("/", "Filter", "filter"),
            ("c", "Columns", "cycle_columns"),
            ("?", "Help", "help"),
            ("R", "Read-ahead", "tune"),
            ("q", "Quit", "quit"),
        ]
    )
    assert fitting(hints, 200) == list(hints)
    narrow = fitting(hints, 40)
    assert [h.key for h in narrow] == ["space", "/", "?", "q"]
    assert sum(map(hint_width, narrow)) <= 40
    assert [h.key for h in fitting(hints, 10)] == ["?", "q"]  # even when nothing else fits
