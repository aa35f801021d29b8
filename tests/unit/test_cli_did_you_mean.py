"""`iotop-plus snapshto`: a mistyped subcommand is not looked for as a device (#22 item 12)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iotop_plus.cli import main

REPO = Path(__file__).resolve().parents[2]
TREE = ["--proc-root", "tests/fixtures/nvme/proc", "--sys-root", "tests/fixtures/nvme/sys"]


@pytest.mark.parametrize(
    ("word", "meant"),
    [("snapshto", "snapshot"), ("sanpshot", "snapshot"), ("serv", "serve"), ("replya", "replay")],
)
def test_a_word_close_to_a_subcommand_says_did_you_mean(
    capsys: pytest.CaptureFixture[str], word: str, meant: str
) -> None:
    code = main([*TREE, word])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert (
        err == f"iotop-plus: error: unknown device or command {word!r} (did you mean {meant!r}?)\n"
    )


def test_a_word_close_to_nothing_is_still_an_unknown_device(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main([*TREE, "nvme9n1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("iotop-plus: error: unknown device 'nvme9n1' (known: ")
    assert "did you mean" not in err


def test_a_mistyped_word_after_a_real_device_says_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """nvme0n1 resolves; the word after it is the one named."""
    code = main([*TREE, "--", "nvme0n1", "snapshto"])
    err = capsys.readouterr().err
    assert code == 2 and "'snapshto' (did you mean 'snapshot'?)" in err


def test_the_console_script_on_this_host_says_did_you_mean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "snapshto"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "iotop-plus: error: unknown device or command 'snapshto' (did you mean 'snapshot'?)\n"
    )
