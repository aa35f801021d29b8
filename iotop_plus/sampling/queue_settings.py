"""The one reader of queue settings (``<sys>/block/DEV/queue/``): the frame's queue part.

:class:`~iotop_plus.sampling.frame.LiveSource` reads them when the set of devices changes,
when a setting change reaches the frame, and every :data:`QUEUE_REFRESH_S`; the exporter, the
recorder and the TUI's aqu-sz warning take them from the frame. The settings panel reads one
setting at a time for writing (:mod:`iotop_plus.devices.settings`), with :func:`parse_scheduler`
from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from iotop_plus.roots import Roots
from iotop_plus.sampling.diskstats import MAX_ATTRIBUTE_BYTES, read_bounded

QUEUE_REFRESH_S = 30.0
"""How often queue settings are re-read when the devices did not change and no setting
change was journaled."""

QUEUE_ATTRIBUTES = (
    "read_ahead_kb",
    "nr_requests",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
    "wbt_lat_usec",
)
"""The numeric files under ``queue/`` that are read (as the kernel writes them, unscaled)."""


def parse_scheduler(raw: str) -> tuple[str | None, tuple[str, ...]]:
    """Split ``none [mq-deadline] kyber`` into (``mq-deadline``, all choices)."""
    current = None
    choices = []
    for word in raw.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            current = word
        choices.append(word)
    if current is None and len(choices) == 1:
        # A lone unbracketed name (a captured tree written by hand) is the current one.
        current = choices[0]
    return current, tuple(choices)


@dataclass(frozen=True)
class QueueSettings:
    """The settings of one device's queue that could be read."""

    scheduler: str | None
    """The active scheduler, or None (no blk-mq queue, or unreadable)."""
    schedulers: tuple[str, ...]
    """Every scheduler the queue offers."""
    values: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Numeric settings by attribute name (:data:`QUEUE_ATTRIBUTES`), as the kernel gives them."""


def read_queue(roots: Roots, device: str) -> QueueSettings:
    """The queue settings of ``device``; absent or unreadable ones are left out."""
    queue = roots.sys_block / device / "queue"
    values: dict[str, int] = {}
    for attribute in QUEUE_ATTRIBUTES:
        try:
            values[attribute] = int(read_bounded(queue / attribute, MAX_ATTRIBUTE_BYTES).strip())
        except (OSError, ValueError):
            continue
    try:
        current, choices = parse_scheduler(read_bounded(queue / "scheduler", MAX_ATTRIBUTE_BYTES))
    except OSError:
        current, choices = None, ()
    return QueueSettings(current, choices, MappingProxyType(values))


def read_queues(roots: Roots, devices: Iterable[str]) -> dict[str, QueueSettings]:
    """:func:`read_queue` for each of ``devices`` (whole devices: partitions share the disk's)."""
    return {name: read_queue(roots, name) for name in devices}


def nr_requests_of(queues: Mapping[str, QueueSettings]) -> dict[str, int]:
    """``queue/nr_requests`` of every device that has one."""
    return {n: q.values["nr_requests"] for n, q in queues.items() if "nr_requests" in q.values}
