"""Messages that carry frozen data up from the sampler thread and between widgets."""

from __future__ import annotations

from textual.message import Message

from iotop_plus.sampling.frame import Frame

Tick = Frame
"""The older name of :class:`~iotop_plus.sampling.frame.Frame`."""


class FrameReady(Message):
    """The sampler thread built a frame. Posted from that thread (post_message is thread-safe).

    Not replaceable: each one feeds the history, and frames are at least 0.25 s apart.
    """

    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame
        """The frozen frame."""

    @property
    def tick(self) -> Frame:
        """The frame (older name)."""
        return self.frame


SampleReady = FrameReady
"""The older name of :class:`FrameReady`."""


class DeviceSelected(Message):
    """The user moved the table's cursor to another device."""

    def __init__(self, name: str | None) -> None:
        super().__init__()
        self.name = name
        """Kernel name of the selected device, or None when the table is empty."""


class SamplerProblem(Message):
    """A tick failed or the counters had bad lines; the header shows it in one line."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        """One line for the user."""
