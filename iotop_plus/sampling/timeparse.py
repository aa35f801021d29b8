"""Times typed by people (``g`` in the TUI, ``--at``): pure functions, no clock of their own.

Accepted (the zone is the recorded host's unless the text carries an offset):

* ``14:05`` or ``14:05:30``: the latest such time at or before ``now``;
* ``14:05:30+01:00`` (or ``Z``): the same, at that offset;
* ``10m ago``, ``90s ago``, ``2h ago`` (also ``10 min ago``), and ``now``;
* ISO 8601: ``2026-11-23T14:05:00``, ``2026-11-23 14:05``, ``2026-11-23T14:05:00+01:00``;
* ``@1700000000``: seconds since the epoch.

The TUI's ``g`` and the commands (``replay --at``, ``snapshot --start/--end``) read times here.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo

MAX_TIME_TEXT = 64
"""Longer input is refused before any parsing."""

FORMS = "14:05, 14:05:30, 10m ago, 2026-11-23T14:05:00, @EPOCH, or with an offset: 14:05+01:00"
"""The accepted forms, for error messages and the jump dialog."""

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_AGO = re.compile(
    r"(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)\s+ago",
    re.IGNORECASE,
)
_OFFSET = r"(Z|[+-]\d{2}(?::?\d{2})?)"
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?" + _OFFSET + "?", re.IGNORECASE)
_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}([T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?" + _OFFSET + "?", re.IGNORECASE
)


class TimeParseError(ValueError):
    """The text is not a time we read; the message is one line for people."""


def _offset(text: str | None) -> tzinfo | None:
    if not text:
        return None
    if text == "Z":
        return timezone.utc
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise TimeParseError(f"no such UTC offset: {text}")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_time(text: str, now: float, zone: tzinfo | None = None) -> float:
    """Seconds since the epoch that ``text`` means.

    Args:
        text: What the user typed.
        now: The present (the newest frame); ``HH:MM`` means the latest such time not after
            it, and ``10m ago`` counts back from it.
        zone: The recorded host's zone; None for the viewer's own (local time).

    Raises:
        TimeParseError: one line saying what is accepted.
    """
    cleaned = " ".join(str(text).split())
    if len(cleaned) > MAX_TIME_TEXT:
        raise TimeParseError(f"time too long ({len(cleaned)} characters); use {FORMS}")
    shown = cleaned if cleaned.isprintable() else ascii(cleaned)[1:-1]
    if not cleaned:
        raise TimeParseError(f"no time given; use {FORMS}")
    if cleaned.lower() == "now":
        return now
    if cleaned.startswith("@"):
        try:
            return float(cleaned[1:])
        except ValueError:
            raise TimeParseError(f"not seconds since the epoch: {shown}") from None
    if m := _AGO.fullmatch(cleaned):
        return now - float(m.group(1)) * _UNITS[m.group(2)[0].lower()]
    if m := _CLOCK.fullmatch(cleaned):
        hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if hour > 23 or minute > 59 or second > 59:
            raise TimeParseError(f"no such time of day: {shown}")
        where = _offset(m.group(5) and m.group(5).upper()) or zone
        today = datetime.fromtimestamp(now, where) if where else datetime.fromtimestamp(now)
        fraction = float(m.group(4) or 0.0)
        at = today.replace(hour=hour, minute=minute, second=second, microsecond=0)
        wall = at.timestamp() + fraction
        if wall > now:
            wall = (at - timedelta(days=1)).timestamp() + fraction
        return wall
    if _ISO.fullmatch(cleaned):
        iso = cleaned.upper().replace(" ", "T")
        if iso.endswith("Z"):
            iso = iso[:-1] + "+00:00"
        try:
            at = datetime.fromisoformat(iso)
        except ValueError:
            raise TimeParseError(f"no such date or time: {shown}") from None
        if at.tzinfo is None:
            at = at.replace(tzinfo=zone) if zone is not None else at.astimezone()
        return at.timestamp()
    raise TimeParseError(f"cannot read '{shown}' as a time; use {FORMS}")


def _local_offset(wall: float) -> timedelta | None:
    return datetime.fromtimestamp(wall).astimezone().utcoffset()


def zone_label(zone: tzinfo | None, wall: float) -> str | None:
    """How the header names ``zone`` at ``wall``; None when it reads like the viewer's own.

    ``CET UTC+01:00`` for a named zone, ``UTC+05:30`` for a fixed offset.
    """
    if zone is None:
        return None
    at = datetime.fromtimestamp(wall, zone)
    offset = at.utcoffset()
    if offset is None or offset == _local_offset(wall):
        return None
    total = int(offset.total_seconds())
    sign = "-" if total < 0 else "+"
    hours, rest = divmod(abs(total), 3600)
    text = f"UTC{sign}{hours:02d}:{rest // 60:02d}"
    name = at.tzname()
    if name and not name.startswith(("UTC", "+", "-")):
        return f"{name} {text}"
    return text


def clock_text(wall: float, zone: tzinfo | None, today: float | None = None) -> str:
    """``14:05:03`` in ``zone`` (local when None), with the date when not the day of ``today``."""
    at = datetime.fromtimestamp(wall, zone) if zone else datetime.fromtimestamp(wall)
    if today is not None:
        ref = datetime.fromtimestamp(today, zone) if zone else datetime.fromtimestamp(today)
        if ref.date() != at.date():
            return at.strftime("%Y-%m-%d %H:%M:%S")
    return at.strftime("%H:%M:%S")
