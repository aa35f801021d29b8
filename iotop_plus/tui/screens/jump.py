"""The ``g`` dialog: type a time, see the frame of that moment (or one line on why not)."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from iotop_plus.text import FORMS, MAX_TIME_TEXT
from iotop_plus.tui.screens.modal import Modal


class JumpScreen(Modal[None]):
    """Asks for a time; ``jump(text)`` moves there and returns an error line, or None.

    The dialog stays open on an error, so the text can be corrected.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, jump: Callable[[str], str | None], hint: str) -> None:
        super().__init__()
        self.jump = jump
        self.hint = hint
        """The span kept and the zone, one line."""
        self.error = ""
        """The last error shown (tests read it)."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Go to time", classes="title")
            yield Static(self.hint, classes="hint", markup=False)
            yield Static(f"e.g. {FORMS}", classes="hint", markup=False)
            yield Input(placeholder="14:05", max_length=MAX_TIME_TEXT, id="jump-time")
            yield Static("", classes="error", id="jump-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#jump-time", Input).focus()

    @on(Input.Submitted, "#jump-time")
    def on_submitted(self, event: Input.Submitted) -> None:
        error = self.jump(event.value)
        if error is None:
            self.dismiss(None)
            return
        self.error = error
        self.query_one("#jump-error", Static).update(error)

    def action_cancel(self) -> None:
        self.dismiss(None)
