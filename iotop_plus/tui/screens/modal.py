"""The one modal base: a box centred over the screen, styled once for every dialog in app.tcss."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class Modal(ModalScreen[ResultT]):
    """A dialog: compose one ``Vertical`` with the content; ``.title``, ``.hint`` and ``.error``
    style its lines. Subclasses add only what differs (e.g. a wider box)."""

    DEFAULT_CSS = """
    Modal { align: center middle; }
    Modal > Vertical { height: auto; }
    Modal Horizontal { height: auto; }
    """
