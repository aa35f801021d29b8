"""Every number format shown to people, in one place, each named for the style it keeps.

Low in the layers (``sampling``) so that the TUI, the commands, the probes and the samplers all
import the same functions. Some styles are deliberate copies of other tools and must not be
"unified": :func:`iotop_rate` prints as iotop does, :func:`lsblk_size` as lsblk does. The
others are fitted to a column width (:func:`table_figure`, :func:`five_chars`,
:func:`compact_bytes`) or to a reading (:func:`grouped`, :func:`us_or_ms`).

Nothing here reads or writes anything; every function is pure.
"""

from __future__ import annotations

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
