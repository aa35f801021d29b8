"""Limits on the headless commands' numbers: one line and exit 2, never a run booked for days."""

from __future__ import annotations

import pytest

from iotop_plus import cli


@pytest.mark.parametrize("value", ["100000", "3601", "0", "-5", "1" * 5000])
def test_sweep_step_runtime_is_bounded_like_probe_runtime(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["sweep", "--target", "/tmp", "--step-runtime", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--step-runtime" in err[0], err


def test_sweep_step_runtime_of_an_hour_is_accepted() -> None:
    args = cli.build_parser().parse_args(["sweep", "--target", "/tmp", "--step-runtime", "3600"])
    assert args.step_runtime == 3600
