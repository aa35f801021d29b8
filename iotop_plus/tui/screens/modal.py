"""The one modal base: a box centred over the screen, styled once for every dialog."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class Modal(ModalScreen[ResultT]):
    """A dialog: compose one ``Vertical`` with the content; ``.title``, ``.hint`` and ``.error``
    style its lines. Subclasses add only what differs (e.g. a wider box)."""

    DEFAULT_CSS = """
    Modal { align: center middle; }
    Modal > Vertical {
        width: 64; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    Modal .title { text-style: bold; }
    Modal .hint { color: $text-muted; }
    Modal .error { color: $error; }
    Modal OptionList { height: auto; max-height: 10; border: none; padding: 0; }
    Modal Input { margin: 1 0 0 0; }
    Modal Horizontal { height: auto; margin: 1 0 0 0; }
    Modal Button { margin: 0 1 0 0; min-width: 0; width: auto; }
    """
