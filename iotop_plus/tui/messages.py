"""Messages that carry frozen data up from the sampler thread and between widgets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.message import Message

from iotop_plus.sampling.inventory import Inventory
from iotop_plus.sampling.rates import DeviceRates
from iotop_plus.sampling.sampler import Sample


@dataclass(frozen=True)
class Tick:
    """Everything one sampler tick produced; immutable, so widgets can keep it."""

    sample: Sample
    """The raw counters just read."""
    rates: Mapping[str, DeviceRates | None]
    """iostat -x rates over the measured interval; None for new or reset devices."""
    inventory: Inventory
    """The device inventory (the same object until the set of devices changes)."""
    inventory_changed: bool
    """True on the first tick and whenever devices appeared or vanished."""
    nr_requests: Mapping[str, int]
    """``queue/nr_requests`` per device that has one (for the aqu-sz warning)."""
    elapsed_s: float | None
    """The measured interval the rates cover; None on the first tick."""
    ever_used: frozenset[str]
    """Devices that have done any I/O since boot (iostat's default selection)."""


class SampleReady(Message):
    """A sampler tick finished. Posted from the sampler thread (post_message is thread-safe).

    Not replaceable: each one feeds the history, and ticks are at least 0.25 s apart.
    """

    def __init__(self, tick: Tick) -> None:
        super().__init__()
        self.tick = tick
        """The frozen result of the tick."""


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
