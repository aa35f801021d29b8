"""#22 item 2 on the real console script: ``/loop2`` Enter typed in one burst, with ``loop2``
and ``loop22`` both present, selects ``loop2`` (it selected ``loop22``, another user's
device, three times out of three), and the Device tab says so."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_tui_tmux import cell, console_script, device_row, wait_for_table
from tests.support.numbered_loop import prefix_pair
from tests.support.tmux import TmuxSession, tmux_available

PANEL_DEVICE = re.compile(r"device\s+/dev/(\S+)\s+\(")
"""The Device tab's first line: which device the panel (and R, S, d, X) is about."""


def panel_device(screen: str) -> str | None:
    found = PANEL_DEVICE.search(screen)
    return found.group(1) if found else None


def frame_clock(screen: str) -> str | None:
    """The header's wall-clock time of the frame shown (changes with every frame)."""
    found = re.search(r"\b\d\d:\d\d:\d\d(?:\.\d+)?\b", screen.split("\n", 1)[0])
    return found.group(0) if found else None


@pytest.fixture
def tmux() -> Iterator[TmuxSession]:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    with TmuxSession(120, 36) as session:
        yield session


@pytest.mark.slow
@pytest.mark.root
def test_slash_loop2_enter_in_one_burst_selects_loop2_not_loop22(
    tmux: TmuxSession, tmp_path: Path
) -> None:
    state = tempfile.mkdtemp(prefix="iotop-plus-test-state-")
    with prefix_pair(tmp_path) as (short, long):
        # Named, so the rows fit however many devices the host has; the last one is neither
        # of the pair (the cursor starts there, a row index away from both).
        last_name = max(p.name for p in Path("/sys/block").iterdir() if p.name not in (short, long))
        launched = tmux.launch(
            [console_script(), "--state-dir", state, "--interval", "0.5", short, long, last_name]
        )
        wait_for_table(tmux)
        # Rates on screen: the starting device (the busiest) is chosen by then.
        tmux.wait_until(lambda s: cell(s, long, "r/s") == "0.00", 20, what=f"{long}'s r/s")
        # The cursor on the last row: a row index kept across the filter lands on loop22.
        tmux.send_keys("End")
        last = tmux.wait_until(
            lambda s: short not in (panel_device(s) or short), 10, what="the last row selected"
        )
        other = panel_device(last)
        assert other is not None
        tmux.send_keys("/" + short, "Enter")  # one send-keys: one burst on the terminal

        def settled(screen: str) -> bool:
            return (
                device_row(screen, other) is None  # the filter is applied
                and device_row(screen, long) is not None
                and panel_device(screen) in (short, long)
            )

        tmux.wait_until(settled, 10, what="the filter applied")
        # The panel follows a selection after the cursor rests (0.15 s): wait for it to say
        # the name typed, then let two more frames come: it must stay there.
        screen = tmux.wait_until(lambda s: panel_device(s) == short, 5, what=f"{short} selected")
        for _ in range(2):

            def moved(s: str, c: str | None = frame_clock(screen)) -> bool:
                return frame_clock(s) != c

            screen = tmux.wait_until(moved, 5, what="a frame")
        assert panel_device(screen) == short, screen
        assert device_row(screen, short) is not None
        tmux.send_keys("q")
        assert tmux.wait_exit(launched, timeout=15) == 0
        tmux.assert_restored(launched)
