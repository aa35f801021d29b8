"""The rows of the device table: what a row is, the kernel's name order, the Device
column's label, its marks (a health problem, a throttled cgroup), and the note about hidden
devices (which one it names, and why)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypeAlias

from iotop_plus.sampling.cgroups.throttle_watch import ThrottlePart
from iotop_plus.sampling.disks.rates import DeviceRates, FigureColumns
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.health.gate import HealthPart
from iotop_plus.sampling.topology.inventory import BlockDevice
from iotop_plus.text import printable
from iotop_plus.tui.widgets.table_columns import LATENCY_KEYS, latency_cell

if TYPE_CHECKING:  # (the histograms' module loads with the first traced frame)
    from iotop_plus.sampling.latency.hist import LatencyFrame

Latency: TypeAlias = "LatencyFrame | None"
"""A frame's latency part as the table reads it (a type only: the module is not loaded)."""

BUSY_IOPS = 50.0
"""A hidden device doing at least this many r/s + w/s (and as many as the busiest shown one)
is named: "9 hidden, loop2 busy (a: show all)"."""

SEVERITY_MARK = "!"
"""Put before a device's name in the table when it has I/O errors since the start, a failing
verdict, a critical warning or wear past 90 %."""


@dataclass(frozen=True)
class TableRow:
    """One line of the table: a device and how it is labelled."""

    name: str
    """Kernel name."""
    label: str
    """What the Device column shows (indent, dm name, what it sits on)."""
    rotational: bool | None
    """Judged as a spinning disk (``BlockDevice.seeks``), as fast storage, or unknown."""
    nr_requests: int | None
    """The queue's capacity, for the aqu-sz warning."""


_LETTERED = re.compile(r"^(sd|vd|xvd|hd)([a-z]+)(\d*)$")


@lru_cache(maxsize=8192)
def natural_key(name: str) -> tuple[object, ...]:
    """Sort key that puts sdb before sdaa and nvme2n1 before nvme10n1, as the kernel does.
    Kept by name: the table and the hidden devices' ordering ask again at every frame."""
    lettered = _LETTERED.match(name)
    if lettered:
        prefix, letters, number = lettered.groups()
        return ((prefix, 0, ""), (1, len(letters), letters), (0, int(number or -1), ""))
    parts: list[object] = []
    for chunk in re.split(r"(\d+)", name):
        if chunk.isdigit():
            parts.append((0, int(chunk), ""))
        elif chunk:
            parts.append((chunk, 0, ""))
    return tuple(parts)


def device_label(dev: BlockDevice | None, name: str, depth: int) -> str:
    """The Device column: partitions indented, dm/md named with what they sit on."""
    indent = "  └" * depth
    if dev is None:
        return indent + printable(name)
    text = dev.friendly_name
    if dev.kind in ("dm", "md"):
        level = f" {dev.md_level}" if dev.md_level else ""
        on = f"←{','.join(dev.slaves)}" if dev.slaves else ""
        text = f"{text}{level}{on}"
    return indent + printable(text)  # names from a captured tree may hold terminal escapes


def hidden_note(count: int, busy: str | None, room: int, why: str = "busy") -> str:
    """What the hidden devices are, in ``room`` cells: "9 hidden, loop2 busy (a: show all)"
    (``why``: "busy" or "throttled"), "9 hidden (a: show all)", or at 80 columns "9 hidden
    (a)"."""
    if busy is not None:
        forms = (f"{count} hidden, {printable(busy)} {why} (a: show all)", f"{count} hidden (a)")
    else:
        forms = (f"{count} hidden (a: show all)", f"{count} hidden (a)")
    return next((f for f in forms if len(f) <= room), forms[-1])


def named_hidden(
    candidates: Sequence[str],
    throttled: frozenset[str],
    iops: Callable[[str], float],
    shown: float,
) -> tuple[str | None, str]:
    """Which hidden device the table and the header name, and why: one a cgroup is throttled
    on ("throttled"), else the busiest when it is busy ("busy": >= BUSY_IOPS and >= ``shown``,
    the busiest shown one's r/s + w/s); (None, "busy") for none."""
    order = lambda n: (-iops(n), natural_key(n))  # noqa: E731
    limited = [n for n in candidates if n in throttled]
    if limited:
        return min(limited, key=order), "throttled"
    if candidates:
        top = min(candidates, key=order)
        if iops(top) >= BUSY_IOPS and iops(top) >= shown:
            return top, "busy"
    return None, "busy"


def throttled_devices(frame: Frame) -> frozenset[str]:
    """The devices some cgroup is throttled on in ``frame`` (the throttle watch's cgroups, else
    the Cgroups part's)."""
    throttles = frame.get(ThrottlePart)
    part = throttles.part if throttles is not None else None
    part = part if part is not None else frame.cgroups
    if part is None:
        return frozenset()
    # (the limits' modules load with the first frame that carries cgroups: not at the start)
    from iotop_plus.sampling.cgroups.limits import device_limits

    return frozenset(t.device for t in device_limits(part.sample, part.rates) if t.throttled)


def figure_sort_keys(
    names: Sequence[str],
    rates: Mapping[str, DeviceRates | None],
    latency: LatencyFrame | None,
    key: str,
) -> Callable[[str], tuple[float]]:
    """The sort key of each of ``names`` by its ``key`` figure, -1.0 where it has none.

    The rows are sorted again every frame while a figure sorts them, so the figures are worked
    out a column at a time, not by a property call per row (docs/performance.md).
    """
    if key in LATENCY_KEYS:

        def latency_key(name: str) -> tuple[float]:
            text, _ = latency_cell(key, latency, name)
            try:
                return (float(text),)
            except ValueError:
                return (-1.0,)

        return latency_key
    shown = [r for name in names if (r := rates.get(name)) is not None]
    have = [name for name in names if rates.get(name) is not None]
    keys = dict.fromkeys(names, (-1.0,))
    keys.update(zip(have, zip(map(float, FigureColumns(shown).values(key))), strict=True))
    return keys.__getitem__


def severity_marks(frame: Frame | None) -> dict[str, str]:
    """Devices the table marks, with why (one phrase each)."""
    health = frame.get(HealthPart) if frame is not None else None
    if health is None:
        return {}
    names = set(health.readings) | set(health.io_errors or {})
    marks = {n: health.severity(n) for n in names}
    return {n: why for n, why in marks.items() if why}
