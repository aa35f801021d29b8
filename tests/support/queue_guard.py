"""Put a test loop device's queue settings back, whatever the test did.

Queue settings belong to the loopN device, not to the attachment: they survive ``losetup -d``
and the next test (or engineer) that attaches loopN would inherit them. So every test that
writes settings wraps its loop device in :func:`restored_queue`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from iotop_plus.devices.settings import SETTINGS
from iotop_plus.sampling.disks.queue_settings import parse_scheduler

# Scheduler first (it resets nr_requests), max_sectors_kb next (it resets read_ahead_kb).
_ORDER = (
    "scheduler",
    "max_sectors_kb",
    *(n for n in SETTINGS if n not in ("scheduler", "max_sectors_kb")),
)


def queue_values(device: str) -> dict[str, str]:
    """The current value of every known setting of ``device``, straight from /sys."""
    values = {}
    for name in _ORDER:
        path = Path("/sys/block") / device / "queue" / name
        if path.exists():
            raw = path.read_text().strip()
            values[name] = parse_scheduler(raw)[0] or raw if name == "scheduler" else raw
    return values


@contextlib.contextmanager
def restored_queue(device: str) -> Iterator[dict[str, str]]:
    """Yield the device's original values; write back any that differ on exit."""
    assert device.startswith("loop"), "only a test's own loop device may be restored"
    original = queue_values(device)
    try:
        yield original
    finally:
        for name, value in original.items():
            path = Path("/sys/block") / device / "queue" / name
            current = queue_values(device).get(name)
            if current != value:
                with contextlib.suppress(OSError):
                    path.write_text(value)
