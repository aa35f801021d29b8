"""User preferences for the TUI: a frozen dataclass, optionally read from a TOML file.

The file is ``$XDG_CONFIG_HOME/iotop-plus/config.toml`` (``~/.config/...`` by default). It is
optional; unknown keys and bad values are reported in one line each and otherwise ignored, so a
typo never stops the tool during an incident.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None

MIN_INTERVAL = 0.25
MAX_INTERVAL = 10.0


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
    chart_refresh_s: float = 5.0
    """Charts redraw at most this often; drawing them is the costliest thing per tick."""
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

    def clamp_interval(self, seconds: float) -> float:
        """``seconds`` limited to the allowed refresh range."""
        return min(MAX_INTERVAL, max(MIN_INTERVAL, seconds))


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
    if tomllib is None:
        if path.exists():
            problems.append(f"{path}: ignored (reading TOML needs Python 3.11 or later)")
        return Config()
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        return Config()
    except (OSError, tomllib.TOMLDecodeError) as exc:
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
        if field is None:
            problems.append(f"{source}: unknown key {key!r} ignored")
            continue
        default = getattr(defaults, key)
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, (int, float)):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
        else:
            ok = isinstance(value, str)
        if not ok:
            problems.append(f"{source}: {key} = {value!r} is not valid; using {default!r}")
            continue
        changes[key] = type(default)(value)
    cfg = replace(defaults, **changes)
    if cfg.column_set not in ("basic", "extended"):
        problems.append(f"{source}: column_set must be basic or extended; using basic")
        cfg = replace(cfg, column_set="basic")
    return replace(cfg, interval=cfg.clamp_interval(cfg.interval))
