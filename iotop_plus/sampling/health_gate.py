"""The frames' health step at no cost while nobody wants health: the health modules (smartctl,
the kernel log, their imports) load only once :data:`~iotop_plus.sampling.frame.HEALTH` is
wanted, so a plain ``snapshot`` pays nothing for health."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from iotop_plus.roots import Roots
    from iotop_plus.sampling.frame import FrameEvent
    from iotop_plus.sampling.health_part import HealthFrame, HealthPart
    from iotop_plus.sampling.inventory import Inventory
    from iotop_plus.sampling.latency_hist import LatencyFrame
    from iotop_plus.sampling.sampler import Sample


def health_step(
    part: HealthPart | None,
    wanted: bool,
    roots: Roots,
    inventory: Inventory,
    sample: Sample,
    latency: LatencyFrame | None = None,
) -> tuple[HealthPart | None, HealthFrame | None, tuple[FrameEvent, ...]]:
    """:func:`iotop_plus.sampling.health_part.health_step`, or nothing at all (no import)
    while health is neither wanted nor running."""
    if part is None and not wanted:
        return None, None, ()
    from iotop_plus.sampling.health_part import health_step as step

    return step(part, wanted, roots, inventory, sample, latency)
