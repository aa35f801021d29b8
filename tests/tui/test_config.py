"""The optional TOML config: defaults, good values, and bad ones reported without stopping."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iotop_plus.config import Config, config_path, load_config
from tests.support.wait import wait_for


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
    path.write_text('column_set = "latency"\n')
    problems: list[str] = []
    assert load_config(path, problems).column_set == "latency" and problems == []


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


@needs_tomllib
def test_a_file_that_is_not_utf8_is_ignored_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"interval = 2\n# caf\xe9\n")
    problems: list[str] = []
    assert load_config(path, problems) == Config()
    assert len(problems) == 1 and "not UTF-8" in problems[0]


@needs_tomllib
@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("history_points = inf", "outside"),
        ("history_points = nan", "outside"),
        ("history_points = 1e300", "not a whole number"),
        ("history_points = 10000000000", "outside"),
        ("history_points = 0", "outside"),
        ("history_points = 60.5", "not a whole number"),
        ("await_bad_ms_solid = nan", "outside"),
        ("await_warn_ms_solid = -1", "outside"),
        ("queue_warn_fraction = 3", "outside"),
        ("util_bad_pct_rotational = 1e308", "outside"),
        ("interval = inf", "outside"),
        ("interval = true", "not a number"),
    ],
)
def test_numbers_outside_sane_bounds_fall_back_to_the_default(
    tmp_path: Path, line: str, why: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(line + "\n")
    problems: list[str] = []
    cfg = load_config(path, problems)
    key = line.split()[0]
    assert getattr(cfg, key) == getattr(Config(), key)
    assert len(problems) == 1 and why in problems[0] and key in problems[0], problems


@needs_tomllib
def test_sane_numbers_are_taken_and_an_int_is_an_int(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("history_points = 5000\nqueue_warn_fraction = 0.5\ninterval = 2\n")
    problems: list[str] = []
    cfg = load_config(path, problems)
    assert problems == []
    assert cfg.history_points == 5000 and isinstance(cfg.history_points, int)
    assert cfg.queue_warn_fraction == 0.5 and cfg.interval == 2.0


def test_tomli_is_a_dependency_below_python_3_11() -> None:
    import tomllib as toml  # the test runs on 3.11+; the package is for 3.10

    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as fh:
        deps = toml.load(fh)["project"]["dependencies"]
    assert any(
        d.replace(" ", "").startswith("tomli>=") and "<'3.11'" in d.replace(" ", "") for d in deps
    )


async def test_config_problems_are_notified_after_the_tui_starts() -> None:
    from tests.tui.canned import canned_app

    app = canned_app()
    app.notes = ("config.toml: history_points = inf is outside 10 to 100000; using 600 [/]",)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: bool(app._notifications), "a notification")
        shown = [n.message for n in app._notifications]
        assert shown == list(app.notes)
