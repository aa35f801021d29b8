"""#25, first figures: `iotop-plus sda /dev/sdb` checks its device names against one read of
/proc/diskstats, and leaves the first frame (the inventory of every device) to be read while
Textual loads. A name only the inventory knows (a /dev/mapper path, a dm name) still reads the
whole first frame before the TUI starts, and a typo is still a usage error."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from iotop_plus import cli
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame import LiveSource

TREE = ["--proc-root", "tests/fixtures/tui_host/proc", "--sys-root", "tests/fixtures/tui_host/sys"]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What the TUI would have started with: the device names, and the frames read by then."""
    seen: dict[str, Any] = {}

    def run_tui(args: argparse.Namespace, roots: Roots, source: LiveSource) -> int:
        seen["devices"] = list(args.tui_devices)
        seen["frames read"] = source._seq
        return 0

    import iotop_plus.tui.run

    monkeypatch.setattr(iotop_plus.tui.run, "run_tui", run_tui)
    monkeypatch.setattr(LiveSource, "prime", lambda self: None)  # no background read here
    return seen


def test_kernel_names_are_checked_without_reading_a_frame(started: dict[str, Any]) -> None:
    assert cli.main([*TREE, "sda", "/dev/sdb"]) == 0
    assert started == {"devices": ["sda", "sdb"], "frames read": 0}


def test_a_mapper_path_reads_the_first_frame_to_resolve_it(started: dict[str, Any]) -> None:
    assert cli.main([*TREE, "sda", "/dev/mapper/vg0-data"]) == 0
    assert started["devices"] == ["sda", "dm-0"] and started["frames read"] == 1


def test_a_typo_is_still_a_usage_error(
    started: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*TREE, "sda", "sdz"]) == 2
    assert "unknown device 'sdz'" in capsys.readouterr().err and not started
