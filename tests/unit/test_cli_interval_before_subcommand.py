"""`iotop-plus --interval S COMMAND`: the interval is used or refused, never silently dropped
(#22 item 12): snapshot, top, record, serve and replay take it as their own `--interval`; a
subcommand without one refuses it in one line; the TUI keeps its 0.25-10 s range."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iotop_plus import cli

REPO = Path(__file__).resolve().parents[2]
TREE = ["--proc-root", "tests/fixtures/nvme/proc", "--sys-root", "tests/fixtures/nvme/sys"]


def parse(*argv: str) -> object:
    return cli.build_parser().parse_args(list(argv))


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(list(argv))
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("iotop-plus: error: "), err
    return err


def test_interval_before_snapshot_is_the_snapshots_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli.main([*TREE, "--interval", "0.01", "snapshot", "-c", "3", "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (host,) = json.loads(out)["sysstat"]["hosts"]
    assert host["interval_s"] == 0.01
    # The default interval would make each at least 1 s: under 0.9 leaves a busy host room.
    assert [s["elapsed_s"] < 0.9 for s in host["statistics"]] == [True] * 3


@pytest.mark.parametrize(
    ("argv", "dest", "value"),
    [
        (["-i", "0.01", "top"], "interval", 0.01),
        (["--interval=0.3", "record"], "interval", 0.3),
        (["-i", "2", "serve"], "interval", 2.0),
        (["-i", "5", "replay", "x.rec"], "replay_interval", 5.0),
        (["-i", "2", "top", "-i", "2"], "interval", 2.0),  # the same value twice is fine
        (["top"], "interval", 1.0),  # defaults are kept
        (["serve"], "interval", 5.0),
        (["replay"], "replay_interval", None),
        (["snapshot"], "interval", None),  # --from tells "not given" by None
        (["top", "-i", "0.7"], "interval", 0.7),
        (["-i", "2"], "interval", 2.0),  # the TUI
    ],
)
def test_interval_goes_to_the_subcommand_that_samples(
    argv: list[str], dest: str, value: float | None
) -> None:
    assert getattr(parse(*argv), dest) == value


@pytest.mark.parametrize(
    "command", [["set", "sda", "read_ahead_kb=64"], ["restore"], ["bundle", "-o", "x.bundle"]]
)
def test_interval_before_a_subcommand_without_one_is_refused(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    err = usage_error(capsys, "-i", "0.5", *command)
    assert f"--interval 0.5 before '{command[0]}': {command[0]} takes no interval" in err


def test_two_different_intervals_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys, "-i", "0.5", "top", "-i", "2")
    assert "--interval given twice: 0.5 before 'top', 2 after it" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-i", "0", "snapshot"], "must be more than 0"),
        (["-i", "100000", "top"], "at most 86400"),
        (["-i", "nan", "record"], "must be more than 0"),
        (["-i", "abc", "serve"], "not a number"),
        (["-i", "0.01"], "the TUI refreshes every 0.25 to 10 seconds"),
        (["-i", "11"], "the TUI refreshes every 0.25 to 10 seconds"),
    ],
)
def test_the_interval_range_is_enforced_wherever_it_goes(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    assert says in usage_error(capsys, *TREE, *argv)


def test_the_tui_range_is_refused_before_anything_starts() -> None:
    """As the user types it, with no terminal: one line and exit 2, no screen."""
    done = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--interval", "0.01"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "0.25 to 10 seconds" in done.stderr
