"""The optional TOML config: defaults, good values, and bad ones reported without stopping."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iotop_plus.config import Config, config_path, load_config


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    problems: list[str] = []
    assert load_config(tmp_path / "none.toml", problems) == Config()
    assert problems == []


needs_tomllib = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is 3.11+")


@needs_tomllib
def test_values_are_read_and_the_interval_is_clamped(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('interval = 60\ncolumn_set = "extended"\nshow_all = true\n')
    cfg = load_config(path)
    assert cfg.interval == 10.0
    assert cfg.column_set == "extended" and cfg.show_all


@needs_tomllib
def test_bad_keys_and_values_are_reported_in_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('intervall = 2\nshow_all = "yes"\ncolumn_set = "wide"\n')
    problems: list[str] = []
    cfg = load_config(path, problems)
    assert cfg.show_all is False and cfg.column_set == "basic"
    assert len(problems) == 3 and all("\n" not in p for p in problems)
    assert "unknown key 'intervall'" in problems[0]


@needs_tomllib
def test_unparsable_file_is_ignored_with_a_message(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("interval = = 1\n")
    problems: list[str] = []
    assert load_config(path, problems) == Config()
    assert problems and "ignored" in problems[0]


def test_path_follows_xdg() -> None:
    assert config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/iotop-plus/config.toml")
    assert config_path({"HOME": "/home/u"}) == Path("/home/u/.config/iotop-plus/config.toml")
