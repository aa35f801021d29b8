"""User preferences for the TUI: a frozen dataclass, optionally read from a TOML file.

The file is ``$XDG_CONFIG_HOME/iotop-plus/config.toml`` (``~/.config/...`` by default). It is
optional; unknown keys and bad values are reported in one line each and otherwise ignored, so a
typo never stops the tool during an incident. Every number has a type and bounds
(:data:`BOUNDS`): ``history_points = 1e300`` would make the charts' window read every frame
kept, and ``inf`` would crash the conversion to int.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, BinaryIO

from iotop_plus.roots import open_regular_binary
from iotop_plus.sampling.clock import MAX_INTERVAL, MIN_INTERVAL


@dataclass(frozen=True)
class Config:
    """What the TUI starts with; every field can be set in the TOML file."""

    interval: float = 1.0
    """Seconds between samples (0.25 to 10)."""
    history_points: int = 600
    """Samples kept per device for the charts (600 = 10 minutes at 1 Hz)."""
    column_set: str = "basic"
    """The device table's starting column set: ``basic`` or ``extended``."""
    show_all: bool = False
    """Start with every device shown (partitions, loop, ram, idle devices)."""
    await_warn_ms_rotational: float = 20.0
    """Mean latency (ms) marked as high on a spinning disk (a few seek times)."""
    await_bad_ms_rotational: float = 50.0
    """Mean latency (ms) marked as bad on a spinning disk."""
    await_warn_ms_solid: float = 5.0
    """Mean latency (ms) marked as high on SSD/NVMe and virtual devices."""
    await_bad_ms_solid: float = 20.0
    """Mean latency (ms) marked as bad on SSD/NVMe and virtual devices."""
    queue_warn_fraction: float = 0.8
    """aqu-sz at this fraction of ``queue/nr_requests`` or more is marked."""
    util_bad_pct_rotational: float = 90.0
    """%util at or above this on a spinning disk is marked (it means saturation there)."""
    history_minutes: float = 15.0
    """Minutes of frames the TUI keeps in memory to scrub back through (``[`` ``]`` ``g``)."""
    diff_minutes: float = 10.0
    """The windows ``w``, ``m`` and ``M`` compare (what changed), in minutes."""
    read_only: bool = False
    """The TUI changes nothing: no tuning, probes or experiments (``--read-only``)."""


BOUNDS: dict[str, tuple[type, float, float]] = {
    "interval": (float, MIN_INTERVAL, MAX_INTERVAL),
    "history_points": (int, 10, 100_000),
    "await_warn_ms_rotational": (float, 0.001, 1e6),
    "await_bad_ms_rotational": (float, 0.001, 1e6),
    "await_warn_ms_solid": (float, 0.001, 1e6),
    "await_bad_ms_solid": (float, 0.001, 1e6),
    "queue_warn_fraction": (float, 0.01, 1.0),
    "util_bad_pct_rotational": (float, 1.0, 1000.0),
    "history_minutes": (float, 1.0, 180.0),
    "diff_minutes": (float, 1.0, 720.0),
}
"""Type and inclusive range of every numeric key. 100,000 history points is 7 hours at the
fastest interval; past a day of samples the charts only get slower to draw. Three hours of
frames in the scrub ring is 43,200 frames at the fastest interval."""


RETIRED: dict[str, str] = {
    "chart_refresh_s": "charts now follow the refresh interval (every frame, when visible)",
}
"""Keys earlier versions read, and why they are gone."""


def config_path(environ: dict[str, str] | None = None) -> Path:
    """Where the config file lives (XDG base directory spec)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "iotop-plus" / "config.toml"


def load_config(path: Path | None = None, problems: list[str] | None = None) -> Config:
    """Read the TOML config; a missing file gives the defaults.

    Args:
        path: The file; defaults to :func:`config_path`.
        problems: Receives one line per ignored key or unreadable file.
    """
    problems = problems if problems is not None else []
    path = path or config_path()
    try:
        # Opened non-blocking and checked on the descriptor: a FIFO put in its place would
        # otherwise hang the start for ever.
        with open_regular_binary(path) as fh:
            return _read_toml(fh, path, problems)
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        problems.append(f"{path}: ignored ({exc.strerror or exc})")
        return Config()


def _read_toml(fh: BinaryIO, path: Path, problems: list[str]) -> Config:
    """The config in the open file ``fh``. The TOML reader is imported only when there is a
    file to read: importing it compiles its regular expressions, 9 ms of every start."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10: the tomli package (a dependency there)
        try:
            import tomli as tomllib
        except ImportError:
            problems.append(f"{path}: ignored (reading TOML needs Python 3.11 or tomli)")
            return Config()
    try:
        raw = tomllib.load(fh)
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: ignored (not UTF-8: a bad byte at offset {exc.start})")
        return Config()
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"{path}: ignored ({exc})")
        return Config()
    return config_from_mapping(raw, problems, str(path))


def config_from_mapping(raw: dict[str, Any], problems: list[str], source: str = "config") -> Config:
    """Build a Config from parsed TOML, skipping (and reporting) bad keys."""
    known = {f.name: f for f in fields(Config)}
    defaults = Config()
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        field = known.get(key)
        if key in RETIRED:
            problems.append(f"{source}: {key!r} ignored: {RETIRED[key]}")
            continue
        if field is None:
            problems.append(f"{source}: unknown key {key!r} ignored")
            continue
        default = getattr(defaults, key)
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        if key in BOUNDS:
            kind, low, high = BOUNDS[key]
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or (kind is int and not isinstance(value, int)):
                what = "a whole number" if kind is int else "a number"
                problems.append(f"{source}: {key} = {shown} is not {what}; using {default!r}")
                continue
            if not math.isfinite(value) or not low <= value <= high:
                if key == "interval" and math.isfinite(value):
                    clamped = min(high, max(low, value))
                    problems.append(
                        f"{source}: {key} = {shown} is outside {low:g} to {high:g}; "
                        f"using {clamped:g}"
                    )
                    changes[key] = float(clamped)
                    continue
                problems.append(
                    f"{source}: {key} = {shown} is outside {low:g} to {high:g}; using {default!r}"
                )
                continue
            changes[key] = kind(value)
            continue
        ok = isinstance(value, bool) if isinstance(default, bool) else isinstance(value, str)
        if not ok:
            problems.append(f"{source}: {key} = {shown} is not valid; using {default!r}")
            continue
        changes[key] = value
    cfg = replace(defaults, **changes)
    if cfg.column_set not in ("basic", "extended", "latency"):
        problems.append(f"{source}: column_set must be basic, extended or latency; using basic")
        cfg = replace(cfg, column_set="basic")
    return cfg
