"""The one reader of queue settings (``<sys>/block/DEV/queue/``): the frame's queue part.

:class:`QueuePart` reads them when the set of devices changes, when a setting change (or a
replaced journal) reaches the frame, and every :data:`QUEUE_REFRESH_S`; the exporter, the
recorder and the TUI's aqu-sz warning take them from the frame. The settings panel reads one
setting at a time for writing (:mod:`iotop_plus.devices.settings`), with :func:`parse_scheduler`
from here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.part import FramePart, ReadContext
from iotop_plus.sysfs import MAX_ATTRIBUTE_BYTES, read_bounded

QUEUES = "queues"
"""The queue part's key."""

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


Queues = Mapping[str, QueueSettings]
"""The queue part's value: every whole device's settings (the same object until they differ)."""
_NONE: Queues = MappingProxyType({})


class QueueReader:
    """Re-reads the settings when the devices change, a setting change or a replaced journal
    reaches the frame, or every ``refresh_s``; else gives the last ones again."""

    def __init__(self, roots: Roots, refresh_s: float = QUEUE_REFRESH_S) -> None:
        self.roots = roots
        self.refresh_s = refresh_s
        self._inventory: object = None
        self._read_at = float("-inf")
        self._queues: Queues = _NONE

    def read(self, ctx: ReadContext) -> tuple[Queues, tuple[()]]:
        """The settings in force for this frame."""
        now = time.monotonic()
        journal = ctx.values.get("journal")
        due = (
            ctx.inventory is not self._inventory
            or any(getattr(e, "kind", None) == "setting" for e in ctx.events)
            or bool(getattr(journal, "restarted", None))
            or now - self._read_at >= self.refresh_s
        )
        if due:
            inventory = ctx.inventory
            whole = [
                n for n, d in inventory.devices.items() if not (d.is_partition or d.unattached_loop)
            ]
            queues = read_queues(self.roots, whole)
            if queues != self._queues:
                self._queues = MappingProxyType(queues)
            self._inventory, self._read_at = inventory, now
        return self._queues, ()

    def close(self) -> None:
        """Nothing held open."""


class QueuePart(FramePart[Queues]):
    """Queue settings of every whole device: read with the disks, not recorded (the
    recording's inventory keeps ``nr_requests``)."""

    key = QUEUES
    always = True
    after = ("journal",)

    def reader(self, roots: Roots) -> QueueReader:
        """Reads ``<sys>/block/DEV/queue/``."""
        return QueueReader(roots)

    def to_json(self, value: Queues) -> Any:
        """``{device: {"scheduler", "schedulers", "values"}}``."""
        return {
            n: {
                "scheduler": q.scheduler,
                "schedulers": list(q.schedulers),
                "values": dict(q.values),
            }
            for n, q in value.items()
        }

    def from_json(self, doc: Any) -> Queues | None:
        """The settings a document describes (entries of another shape left out)."""
        if not isinstance(doc, Mapping):
            return None
        out: dict[str, QueueSettings] = {}
        for name, q in doc.items():
            if not isinstance(name, str) or not isinstance(q, Mapping):
                continue
            scheduler, choices, values = q.get("scheduler"), q.get("schedulers"), q.get("values")
            out[name] = QueueSettings(
                scheduler if isinstance(scheduler, str) else None,
                tuple(c for c in choices if isinstance(c, str))
                if isinstance(choices, list)
                else (),
                MappingProxyType(
                    {
                        k: v
                        for k, v in values.items()
                        if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                    }
                    if isinstance(values, Mapping)
                    else {}
                ),
            )
        return MappingProxyType(out)
