"""Device health as a recording keeps it (format version 4, record type ``H``).

The ``H`` document is :meth:`~iotop_plus.sampling.health.part.HealthFrame.as_json` plus the
frame's wall time (``"wall"``). Readings change at most every 5 minutes a device, so a sample
carries ``H`` only when something changed (a new reading, new I/O errors) and in the first
sample of each chunk (one wall-clock minute) or file: a chunk can be read alone, and the
reader takes the last ``H`` at or before a sample in its chunk, its ages moved on by the
time since. I/O errors as they happen ride the events record (kind ``io-error``).

Files without ``H`` (version 3 and older, or recorded without health) replay with no health.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.health.gate import HealthPart
from iotop_plus.sampling.health.part import HealthFrame, health_from_json

HEALTH = "H"
"""The record type of device health."""
CHUNK_S = 60
"""A chunk is one wall-clock minute (:data:`~iotop_plus.record.chunks.CHUNK_SECONDS`)."""


def _unchanging(doc: Mapping[str, Any]) -> Any:
    """What of an ``H`` document matters for "changed" (not the ages, which always move)."""
    devices = {n: {k: v for k, v in d.items() if k != "age_s"} for n, d in doc["devices"].items()}
    return (devices, doc.get("io_errors"), doc.get("io_error_source"), doc.get("problem"))


def _rest(health: HealthFrame) -> tuple[Any, ...]:
    """What of ``health`` besides its readings goes into the ``H`` key."""
    errors = dict(health.io_errors) if health.io_errors is not None else None
    return (errors, health.io_error_source, health.problem)


class HealthParts:
    """Adds ``H`` to the recorder's samples when health changed or a chunk or file starts."""

    def __init__(self) -> None:
        """Nothing written yet."""
        self._last: Any = None
        self._minute: int | None = None
        self._files: int | None = None
        self._seen: tuple[Any, ...] | None = None
        """The last health looked at: its readings (the objects) and the rest of the key."""

    def _same_as_seen(self, health: HealthFrame) -> bool:
        """Whether ``health`` holds the very readings and the same counts as the last one
        looked at (then its ``H`` key is the same: no need to encode it to know)."""
        seen = self._seen
        if seen is None:
            return False
        readings, rest = seen
        now = health.readings
        return (
            len(now) == len(readings)
            and all(readings.get(name) is reading for name, reading in now.items())
            and rest == _rest(health)
        )

    def add(
        self, rs: RecordedSample, frame: Frame, files_started: int, file_open: bool
    ) -> RecordedSample:
        """``rs`` with ``H`` when it is due; ``files_started`` and ``file_open`` are the
        recorder's before ``rs`` is written (a new file writes it again)."""
        health = frame.get(HealthPart)
        if health is None:
            return rs
        minute = int(frame.wall_time // CHUNK_S)
        new_file = not file_open or files_started != self._files
        self._files = files_started if file_open else files_started + 1
        due = new_file or minute != self._minute or frame.inventory_changed or health.new_errors
        if not due and self._same_as_seen(health):
            return rs  # most samples: the readings change at most every few minutes
        self._seen = (dict(health.readings), _rest(health))
        doc = health.as_json()
        key = _unchanging(doc)
        if not due and key == self._last:
            return rs
        self._last, self._minute = key, minute
        doc["wall"] = frame.wall_time
        return dataclasses.replace(rs, parts={**rs.parts, HEALTH: doc})


def chunk_health(samples: Sequence[RecordedSample], i: int, wall: float) -> HealthFrame | None:
    """The health in force at sample ``i`` of a chunk: its own ``H``, else the last one before
    it (ages moved on to ``wall``, no new errors), else None; read for the sample's own
    devices only."""
    if not samples:
        return None
    devices = samples[min(i, len(samples) - 1)].sample.counters
    for j in range(min(i, len(samples) - 1), -1, -1):
        doc = samples[j].parts.get(HEALTH)
        if not isinstance(doc, Mapping):
            continue
        found = health_from_json(doc, devices)
        if found is None:
            return None
        if j == i:
            return found
        written = doc.get("wall")
        later = wall - written if isinstance(written, int | float) else 0.0
        ages = {n: a + max(0.0, later) for n, a in found.age_s.items()}
        return dataclasses.replace(
            found, age_s=MappingProxyType(ages), new_errors=MappingProxyType({})
        )
    return None
