"""Times, durations and sizes typed by the user (pure: no I/O).

A time without an offset is in the recorded host's zone (REFERENCE.md, "Time"): ``14:05`` is
the last 14:05 at or before ``now`` there; ``10m ago`` counts back from ``now``; ISO 8601
with ``Z`` or ``+01:00`` means what it says; ``@1700000000`` is seconds since the epoch.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|m|min|mins|h|hr|hrs|d|w)?\s*$", re.I)
_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?\s*$")
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


def parse_time(text: str, now: float, tz: tzinfo) -> float:
    """A time typed by the user, as wall seconds since the epoch.

    Args:
        text: ``14:05``, ``14:05:30``, ``10m ago``, ``2026-01-02T03:04:05[Z|+01:00]``,
            ``2026-01-02 03:04``, ``@1700000000``, or ``now``.
        now: The reference "now" (a recording's end, or the clock).
        tz: The zone of times typed without an offset.

    Raises:
        ValueError: one line naming what was typed and the accepted forms.
    """
    raw = text.strip()
    if raw.lower() == "now":
        return now
    if raw.startswith("@"):
        try:
            return float(raw[1:])
        except ValueError:
            pass
    low = raw.lower()
    if low.endswith(" ago") or low.endswith("ago"):
        return now - parse_duration(low.removesuffix("ago").strip())
    m = _CLOCK.match(raw)
    if m:
        hour, minute = int(m.group(1)), int(m.group(2))
        second = float(m.group(3) or 0)
        if hour > 23 or minute > 59 or second >= 61:
            raise ValueError(f"not a time of day: {raw[:40]!r}")
        today = datetime.fromtimestamp(now, tz)
        at = today.replace(hour=hour, minute=minute, second=int(second), microsecond=0)
        at += timedelta(seconds=second - int(second))
        if at.timestamp() > now + 1e-6:
            at = (today - timedelta(days=1)).replace(
                hour=hour, minute=minute, second=int(second), microsecond=0
            )
        return at.timestamp()
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"not a time: {raw[:40]!r} (use 14:05, 10m ago, 2026-01-02T03:04:05+01:00 or @EPOCH)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=tz)
    return parsed.timestamp()


def format_time(wall: float, tz: tzinfo) -> str:
    """ISO 8601 with the zone's offset, to the second (as ``snapshot`` prints)."""
    return datetime.fromtimestamp(wall, tz).isoformat(timespec="seconds")
