"""Messages between widgets, and what every collaborator of the main screen says through.

Messages here and in the widgets are dataclasses, as Textual's own (``Input.Changed``):
``Message.__init__`` only calls ``Message.__post_init__``, which the dataclass's generated
``__init__`` calls in turn, so the sender and time are set either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel


class Notifies(Protocol):
    """What says one line to the user (a Textual screen or app): the part of a view every
    collaborator of the main screen uses."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Say one line."""


@dataclass
class DeviceSelected(Message):
    """The user moved the table's cursor to another device."""

    name: str | None
    """Kernel name of the selected device, or None when the table is empty."""
