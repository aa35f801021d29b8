"""The device name filter's text box: Enter hands the keyboard back at once."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input


class FilterInput(Input):
    """An Input whose Enter is a priority binding.

    Input's own Enter posts ``Submitted``, handled a turn later: a key typed right after
    Enter (a fast typist over SSH, a paste) was by then already forwarded to the box and
    typed into the filter. A priority binding runs as the App receives the key, before the
    next key is forwarded, so the screen moves the focus in time.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "done", "Keep filter", show=False, priority=True),
    ]

    def action_done(self) -> None:
        """Keep the filter and give the keyboard back to the table (see the screen)."""
        finish = getattr(self.screen, "finish_filter", None)
        if finish is not None:
            finish(self.value)
        else:  # not on the main screen: behave as a plain Input
            self.post_message(self.Submitted(self, self.value))
