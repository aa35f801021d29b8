"""The one modal base: a box centred over the screen, styled once for every dialog in
later.tcss."""

from __future__ import annotations

import os
from typing import TypeVar

from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")

LATER_CSS = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, "later.tcss"))
"""The styles of what comes after the first paint (the charts, the side panel's tabs, the
dialogs, the experiment screens), apart from app.tcss so the first screen does not wait for
them: read before the charts and the side panel are mounted
(:class:`~iotop_plus.tui.screens.later_parts.LaterParts`), or by Textual when a screen whose
``CSS_PATH`` names it comes first. Absolute, as Textual keys a stylesheet's sources by path:
read either way, it is read once."""


class Modal(ModalScreen[ResultT]):
    """A dialog: compose one ``Vertical`` with the content; ``.title``, ``.hint`` and ``.error``
    style its lines. Subclasses add only what differs (e.g. a wider box)."""

    CSS_PATH = LATER_CSS

    DEFAULT_CSS = """
    Modal { align: center middle; }
    Modal > Vertical { height: auto; }
    Modal Horizontal { height: auto; }
    """
