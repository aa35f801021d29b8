"""Disks' model, vendor, serial and WWN from udev's database, when udevd keeps one."""

from __future__ import annotations

import os
from collections.abc import Iterable

UDEV_DATABASE = "/run/udev/data"
"""Where udevd records device properties (libudev, hence pyudev, reads them from here)."""


def udev_identity(names: Iterable[str]) -> dict[str, dict[str, str]]:
    """Model/vendor/serial/WWN from the udev database, for the names udev knows.

    Returns an empty map when pyudev or udev's database is unavailable. Without the database
    (no udevd, as in many containers) pyudev is not even imported: it would cost ~30 ms and
    a lookup per device to learn nothing.
    """
    if not os.path.isdir(UDEV_DATABASE):
        return {}
    try:
        import pyudev  # deferred: costs ~30 ms and is optional at run time
    except ImportError:
        return {}
    out: dict[str, dict[str, str]] = {}
    try:
        context = pyudev.Context()
        for name in names:
            try:
                dev = pyudev.Devices.from_name(context, "block", name)
            except Exception:
                continue
            props = {
                key: str(dev.properties[key])
                for key in ("ID_MODEL", "ID_VENDOR", "ID_SERIAL_SHORT", "ID_SERIAL", "ID_WWN")
                if dev.properties.get(key)
            }
            if props:
                out[name] = props
    except Exception:
        return {}
    return out
