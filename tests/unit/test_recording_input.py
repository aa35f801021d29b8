"""``diff --from`` and ``snapshot --from`` open their recording the same way: a path that
is missing, not a recording, or a recording with no samples gets the same one line on stderr
from each, exit 1 and no traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.recorded_load import Load, write_recording

COMMANDS = (("diff", "--b", "@1..@2"), ("snapshot",))


def missing(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "gone.rec"
    return path, f"iotop-plus: error: {path}: No such file or directory"


def not_a_recording(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "bad.rec"
    path.write_bytes(b"\x00" * 4096)
    return path, f"iotop-plus: error: {path}: not an iotop-plus recording"


def no_samples(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "empty.rec"
    write_recording(path, Load(2, seed=1), 0)
    return path, f"iotop-plus: error: {path}: no samples"


@pytest.mark.parametrize("case", [missing, not_a_recording, no_samples])
def test_both_commands_say_the_same_line_of_a_recording_they_cannot_read(
    tmp_path: Path, case: Callable[[Path], tuple[Path, str]]
) -> None:
    path, line = case(tmp_path)
    for command, *extra in COMMANDS:
        done = run_cli(command, "--from", str(path), *extra)
        assert (done.returncode, done.stderr, done.stdout) == (1, line + "\n", ""), command
