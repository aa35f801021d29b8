"""Text for people and for other tools: printable names, number formats, typed times.

Nothing here reads or writes anything; every function is pure, and every layer may import it
(it sits at the bottom, beside :mod:`iotop_plus.sysfs`).

* :func:`printable`: every name from the kernel or the filesystem passes through it before it
  reaches a terminal, JSON, CSV or a metric label.
* Number formats, each named for the style it keeps. Some are deliberate copies of other tools
  and must not be "unified": :func:`iotop_rate` prints as iotop does, :func:`lsblk_size` as
  lsblk does. The others are fitted to a column width (:func:`table_figure`,
  :func:`five_chars`, :func:`compact_bytes`) or to a reading (:func:`grouped`,
  :func:`us_or_ms`).
* Times typed by people (``g`` in the TUI, ``replay --at``, ``snapshot --start/--end``):
  :func:`parse_time`. Accepted (the zone is the recorded host's unless the text carries an
  offset):

  - ``14:05`` or ``14:05:30``: the latest such time at or before ``now``;
  - ``14:05:30+01:00`` (or ``Z``): the same, at that offset;
  - ``10m ago``, ``90s ago``, ``2h ago`` (also ``10 min ago``), and ``now``;
  - ISO 8601: ``2026-11-23T14:05:00``, ``2026-11-23 14:05``, ``2026-11-23T14:05:00+01:00``;
  - ``@1700000000``: seconds since the epoch.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

# ---- printable text -----------------------------------------------------------------------


def _escapes() -> dict[int, str]:
    """What :func:`printable` puts for each character it escapes."""
    table = {c: f"\\x{c:02x}" for c in (*range(32), 127, *range(128, 160))}
    table.update({0xDC00 + b: f"\\x{b:02x}" for b in range(128, 256)})  # os.fsdecode's bytes
    table.update({c: f"\\u{c:04x}" for c in range(0xD800, 0xE000) if c not in table})
    return table


_ESCAPES = _escapes()


def printable(text: str) -> str:
    r"""``text`` as valid UTF-8 with no control character: every control character (C0, DEL,
    C1) and every byte that was not UTF-8 (held as a surrogate escape, as ``os.fsdecode``
    gives it) shown as ``\xNN``; any other lone surrogate as ``\uNNNN``.

    Names from the kernel and the filesystem (cgroups, processes, mounts, devices, files) may
    hold any byte but ``/`` and NUL; everything written for people or for other tools goes
    through here.
    """
    if text.isprintable():
        return text
    return text.translate(_ESCAPES)


def printable_doc(doc: Any) -> Any:
    """``doc`` (JSON-like: dicts, lists, strings, numbers) with every string, keys too,
    passed through :func:`printable`."""
    if isinstance(doc, str):
        return printable(doc)
    if isinstance(doc, dict):
        return {printable(k) if isinstance(k, str) else k: printable_doc(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [printable_doc(v) for v in doc]
    return doc


# ---- plain and SI numbers (chart ticks) -------------------------------------------------


def plain_number(v: float) -> str:
    """``v`` without float noise: 0.30000000000000004 is 0.3, 2000.0 is 2000."""
    return f"{round(v, 9):g}"


def si_number(v: float) -> str:
    """``v`` with a k/M/G suffix: 2500 is 2.5k."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return plain_number(v / div) + suffix
    return plain_number(v)


# ---- figures fitted to a column ---------------------------------------------------------


def table_figure(value: float, scale: int | None = None) -> str:
    """A figure of the device table in at most 7 characters; ``scale`` (the column's, from
    ``table_columns.column_scale``) makes every figure of a column alike, else the value
    alone decides: 2 decimals, then 0, then ``k`` and ``M``."""
    if scale is None:
        if value >= 9_999_500:
            return f"{value / 1e6:.0f}M"
        if value >= 99_999.5:
            return f"{value / 1e3:.0f}k"
        scale = 0 if value >= 9_999.995 else 2
    if scale < 0:
        return f"{value / 1e3:.0f}k" if value < 9_999_999_500 else f"{value / 1e6:.0f}M"
    return f"{value:.{scale}f}"


def five_chars(x: float) -> str:
    """At most 5 characters: 0.42, 12.3, 452, 4521, 45.2k, 452k, 1.2M (3 digits are kept)."""
    if x >= 1e8:
        return f"{x / 1e6:.0f}M"
    if x >= 1e6:
        return f"{x / 1e6:.1f}M"
    if x >= 1e5:
        return f"{x / 1e3:.0f}k"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def compact_bytes(value: float | None) -> str:
    """Bytes in at most 7 characters: ``0``, ``512K``, ``4.0M``, ``1.2G`` (``/s`` implied)."""
    if value is None:
        return "-"
    if value < 1:
        return "0"
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{value:.0f}{unit}" if value >= 100 or unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return "?"  # pragma: no cover


# ---- the styles of other tools ----------------------------------------------------------


def iotop_rate(bps: float | None) -> str:
    """Bytes per second as iotop prints them: ``0.00 B/s``, ``4.00 M/s``."""
    if bps is None:
        return "?"
    value = bps
    for unit in ("B", "K", "M", "G"):
        if value < 1024 or unit == "G":
            return f"{value:.2f} {unit}/s"
        value /= 1024
    return f"{value:.2f} T/s"  # pragma: no cover - the loop always returns


def lsblk_size(size_bytes: int) -> str:
    """Binary units, as lsblk shows them: ``512 B``, ``16.0 MiB``."""
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} PiB"


def cgroup_bytes(value: int) -> str:
    """A cgroup limit in the kernel's own suffixes: ``2097152`` -> ``2M``, ``1536`` -> ``1.5K``,
    ``120`` -> ``120``."""
    v = float(value)
    for unit in ("", "K", "M", "G"):
        if v < 1024:
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
        v /= 1024
    return f"{v:.0f}T" if v == int(v) else f"{v:.1f}T"


# ---- readings ---------------------------------------------------------------------------


def grouped(value: float | None) -> str:
    """Thousands grouped, one decimal below 100: ``1,234``, ``12.5``; ``-`` when unknown."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def grouped_signed(value: float) -> str:
    """:func:`grouped` with its sign: ``+1,234``, ``-0.5``."""
    return f"{value:+,.0f}" if abs(value) >= 100 else f"{value:+,.1f}"


def two_decimals(value: float | None, scale: float = 1.0) -> str:
    """``value / scale`` grouped with two decimals: ``1,234.50``; ``-`` when unknown."""
    return "-" if value is None else f"{value / scale:,.2f}"


def us_or_ms(value: float) -> str:
    """Microseconds: ``850 µs`` below a millisecond, else ``1.25 ms``."""
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} µs"


# ---- times ------------------------------------------------------------------------------


def ago(seconds: float) -> str:
    """``-90s``, ``-2m``, ``-1h`` for an x tick ``seconds`` before the end."""
    s = round(seconds)
    if s % 3600 == 0 and s >= 3600:
        return f"-{s // 3600}h"
    if s % 60 == 0 and s >= 60:
        return f"-{s // 60}m"
    return f"-{s}s"


def uptime(seconds: float | None) -> str:
    """``3d 04:05`` style uptime; ``?`` when unknown."""
    if seconds is None:
        return "?"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    return f"{days}d {hours:02d}:{minutes:02d}" if days else f"{hours:02d}:{minutes:02d}"


# ---- times typed by people ----------------------------------------------------------------


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
