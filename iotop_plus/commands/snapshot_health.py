"""``snapshot --health``: ``disk[].health`` in a fixed shape,
from the frame's health part, with each reason it cannot say more printed once on stderr."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.health.gate import HealthPart
from iotop_plus.sampling.health.smart import INSTALL_HINT, READ_TIMEOUT_S
from iotop_plus.text import printable

HEALTH_WAIT_S = READ_TIMEOUT_S + 2.0
"""How long a live snapshot waits for the first reading of every device (smartctl runs one
device at a time, each killed after its timeout): devices still unread say so."""

_said: set[str] = set()


def add_health(disks: Sequence[dict[str, Any]], frame: Frame | None) -> None:
    """Give each ``disk[]`` entry its ``health`` (null when the frame has no health part)."""
    health = frame.get(HealthPart) if frame is not None else None
    for disk in disks:
        disk["health"] = health.device_json(disk["disk_device"]) if health is not None else None
    notes = []
    if health is None:
        notes.append("no health figures in these frames")
    else:
        if health.problem:
            notes.append(health.problem)
        for reading in health.readings.values():
            if reading.reason and INSTALL_HINT in reading.reason:
                notes.append(f"device health without smartctl: {INSTALL_HINT}")
    for note in notes:
        if note not in _said:
            _said.add(note)
            print(f"iotop-plus: note: {printable(note)}", file=sys.stderr)


HEALTH_POLL_S = 0.05
"""How often the wait looks at a new frame (each costs a diskstats read)."""


def wait_for_health(source: LiveSource, timeout: float = HEALTH_WAIT_S) -> None:
    """Build frames until each whole device has a health reading, or ``timeout`` passed.

    The worker reads in its own thread; frames only copy what it has, so this polls them.
    """
    _said.clear()
    deadline = time.monotonic() + timeout
    while True:
        frame = source.next_frame()
        health = frame.get(HealthPart)
        whole = [n for n, d in frame.inventory.devices.items() if not d.is_partition]
        if health is not None and all(n in health.readings for n in whole):
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(HEALTH_POLL_S)
