"""Durations and sizes typed by the user, and a recording's zone (pure: no I/O).

Times typed by the user are read by :func:`iotop_plus.text.parse_time`, the one
parser the TUI's ``g`` and the commands share.
"""

from __future__ import annotations

import re
from datetime import timedelta, timezone, tzinfo

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|m|min|mins|h|hr|hrs|d|w)?\s*$", re.I)
_SIZES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``2h``, ``7d``, ``1w`` as seconds (a bare number is seconds).

    Raises:
        ValueError: one line naming what was typed.
    """
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"not a duration: {text[:40]!r} (use e.g. 90s, 15m, 2h, 7d)")
    unit = (m.group(2) or "s")[0].lower()
    return float(m.group(1)) * _UNITS[unit]


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``1.5T``, ``4096`` as bytes (binary units).

    Raises:
        ValueError: one line naming what was typed.
    """
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", text, re.I)
    if not m:
        raise ValueError(f"not a size: {text[:40]!r} (use e.g. 500M, 2G)")
    return int(float(m.group(1)) * _SIZES[m.group(2).lower()])


def zone_of(name: str | None, utc_offset_s: int | None) -> tzinfo:
    """The recorded host's zone: by name when this host knows it, else its fixed offset."""
    if name:
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(name)
        except (ImportError, ValueError, OSError, KeyError):
            pass
    return timezone(timedelta(seconds=utc_offset_s or 0))
