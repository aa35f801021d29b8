"""Messages that carry frozen data up from the sampler thread and between widgets.

Messages here and in the widgets are dataclasses, as Textual's own (``Input.Changed``):
``Message.__init__`` only calls ``Message.__post_init__``, which the dataclass's generated
``__init__`` calls in turn, so the sender and time are set either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from iotop_plus.sampling.frame.model import Frame

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
class FrameReady(Message):
    """The sampler thread built a frame. Posted from that thread (post_message is thread-safe).

    Not replaceable: each one feeds the history, and frames are at least 0.25 s apart.
    """

    frame: Frame
    """The frozen frame."""


@dataclass
class DeviceSelected(Message):
    """The user moved the table's cursor to another device."""

    name: str | None
    """Kernel name of the selected device, or None when the table is empty."""


@dataclass
class SamplerProblem(Message):
    """A tick failed or the counters had bad lines; the header shows it in one line."""

    text: str
    """One line for the user."""
