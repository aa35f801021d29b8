"""The frame's health part, at no cost while nobody wants health: the health modules (smartctl,
the kernel log, their imports) load only once :data:`HEALTH` is wanted, so a plain
``snapshot`` pays nothing for health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.frame.model import LATENCY
from iotop_plus.sampling.frame.part import FramePart, ReadContext

if TYPE_CHECKING:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.frame.model import FrameEvent
    from iotop_plus.sampling.health.part import HealthFrame, HealthState

HEALTH = "health"
"""The health part's key: device health (a worker thread reads smartctl/sysfs) and I/O errors
since the start."""


class HealthReader:
    """The health worker and error counter, started at the first frame that reads health."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.state: HealthState | None = None

    def read(self, ctx: ReadContext) -> tuple[HealthFrame | None, tuple[FrameEvent, ...]]:
        """This frame's health and its ``io-error`` events; nothing on a frame without
        devices. The I/O errors come from the latency tracer while it counts them, else the
        kernel log."""
        from iotop_plus.sampling.health.part import health_step

        latency: Any = ctx.values.get(LATENCY)
        wanted = bool(ctx.sample.counters)
        self.state, health, events = health_step(
            self.state, wanted, ctx.roots, ctx.inventory, ctx.sample, latency
        )
        return health, events

    def close(self) -> None:
        """Stop the worker and release the kernel log."""
        state, self.state = self.state, None
        if state is not None:
            state.close()


class HealthPart(FramePart["HealthFrame"]):
    """Each device's latest health reading, its age and I/O errors since the start, recorded
    as ``H`` (by :class:`~iotop_plus.record.recorded_health.HealthParts`: only when it
    changed and at each chunk's start, so :meth:`record_json` gives nothing of its own)."""

    key = HEALTH
    letter = "H"

    def reader(self, roots: Roots) -> HealthReader:
        """Starts nothing until the first frame."""
        return HealthReader(roots)

    def to_json(self, value: HealthFrame) -> Any:
        """:meth:`~iotop_plus.sampling.health.part.HealthFrame.as_json`."""
        return value.as_json()

    def from_json(self, doc: Any) -> HealthFrame | None:
        """:func:`~iotop_plus.sampling.health.part.health_from_json`."""
        from iotop_plus.sampling.health.part import health_from_json

        return health_from_json(doc)

    def record_json(self, value: HealthFrame) -> Any:  # noqa: ARG002
        """Nothing: the recorder's health writer decides when ``H`` is due."""
        return None
