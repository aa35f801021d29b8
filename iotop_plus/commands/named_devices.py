"""The devices named on the command line, as kernel names: ``snapshot``'s and the TUI's.

Apart from the snapshot's output, so the TUI checks the names it was given without loading
what a snapshot prints (the TUI's first figures wait for its imports: docs/performance.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from iotop_plus.commands.common import UsageError
from iotop_plus.text import printable

if TYPE_CHECKING:
    from iotop_plus.sampling.disks.sampler import Sample
    from iotop_plus.sampling.topology.inventory import Inventory


def resolve_devices(
    requested: Sequence[str], sample: Sample, inventory: Inventory
) -> list[str] | None:
    """Map the user's device arguments to kernel names; None when none were given.

    Raises:
        UsageError: naming the device that does not exist.
    """
    if not requested:
        return None
    names = []
    for arg in requested:
        base = arg.removeprefix("/dev/")
        if base in sample.counters:
            names.append(base)
            continue
        dev = inventory.lookup(arg)
        if dev is None or dev.name not in sample.counters:
            known = printable(", ".join(sorted(sample.counters)[:12]))
            more = ", ..." if len(sample.counters) > 12 else ""
            shown = arg if len(arg) <= 80 else f"{arg[:60]}...({len(arg):,} characters)"
            raise UsageError(f"unknown device {shown!r} (known: {known}{more})")
        names.append(dev.name)
    return names
