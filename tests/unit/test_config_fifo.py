"""A FIFO where the config file should be (#22 item 10): one line and the defaults, never a
start that waits for ever for a writer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: What the TUI does at start: load the config from the XDG path, print each problem.
LOAD = """
from iotop_plus.config import Config, load_config
problems = []
config = load_config(problems=problems)
for line in problems:
    print(f"iotop-plus: {line}")
print("defaults" if config == Config() else "changed")
"""


def load_in_a_child(config_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home)}
    try:
        return subprocess.run(
            [sys.executable, "-c", LOAD],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("load_config() hung on the config file")


def test_a_fifo_as_the_config_file_is_one_line_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "iotop-plus" / "config.toml"
    path.parent.mkdir()
    os.mkfifo(path)
    done = load_in_a_child(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"iotop-plus: {path}: ignored (not a regular file (a FIFO))",
        "defaults",
    ]


def test_a_directory_as_the_config_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "iotop-plus" / "config.toml"
    path.mkdir(parents=True)
    done = load_in_a_child(tmp_path)
    assert done.stdout.splitlines()[0].startswith(f"iotop-plus: {path}: ignored (")
    assert done.stdout.splitlines()[1:] == ["defaults"] and "Traceback" not in done.stderr


def test_a_regular_config_file_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "iotop-plus" / "config.toml"
    path.parent.mkdir()
    path.write_text("interval = 2.0\n")
    done = load_in_a_child(tmp_path)
    assert done.stdout.splitlines() == ["changed"], done.stderr
