"""The README documents the config file: every key, its default and its bounds."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from iotop_plus.config import BOUNDS, Config

README = Path(__file__).resolve().parents[2] / "README.md"


def test_config_keys_are_missing_from_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in text.splitlines()
        if line.startswith("| `")
    }
    defaults = Config()
    for f in fields(Config):
        assert f.name in rows, f"{f.name} is not in the README's config table"
        default = getattr(defaults, f.name)
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        assert shown in rows[f.name], (f.name, shown)
        if f.name in BOUNDS:
            _, low, _ = BOUNDS[f.name]
            assert f"{low:g}" in rows[f.name], (f.name, low)
