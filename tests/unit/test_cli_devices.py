"""``iotop-plus [--all] [DEV...]``: bare words are devices unless they name a subcommand."""

from __future__ import annotations

import pytest

from iotop_plus.cli import build_parser, main, split_devices

COMMANDS = tuple(build_parser().commands)


@pytest.mark.parametrize(
    ("argv", "rest", "devices"),
    [
        ([], [], []),
        (["sda"], [], ["sda"]),
        (["--all", "sda", "nvme0n1"], ["--all"], ["sda", "nvme0n1"]),
        (["-i", "2", "sda", "-a"], ["-i", "2", "-a"], ["sda"]),
        (["--sys-root", "snapshot", "vda"], ["--sys-root", "snapshot"], ["vda"]),
        (["snapshot", "sda"], ["snapshot", "sda"], []),
        (["--interval=2", "top"], ["--interval=2", "top"], []),
        (["--", "-weird-name"], [], ["-weird-name"]),
    ],
)
def test_split_devices(argv: list[str], rest: list[str], devices: list[str]) -> None:
    assert split_devices(argv, COMMANDS) == (rest, devices)


def test_a_device_that_does_not_exist_is_a_usage_error_before_the_screen_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "--proc-root",
            "tests/fixtures/nvme/proc",
            "--sys-root",
            "tests/fixtures/nvme/sys",
            "nope0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("iotop-plus: error: unknown device 'nope0'")
