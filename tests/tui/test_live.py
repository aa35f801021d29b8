"""The app on real roots: the host's own /proc and /sys with loop devices coming and going,
a synthetic tree of 2,000 disks, and the installed console script under tmux."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.tui.app import make_app
from tests.support.loopdev import backing_of, detach, remove_node
from tests.support.synthetic import SyntheticTree
from tests.tui.helpers import parts_up, row_line, started, step, step_to, table, wait_for

FAST = Config(interval=0.25)


@pytest.mark.root
async def test_hotplugged_loop_devices_come_and_go_without_a_crash(make_loop) -> None:
    app = make_app(Roots(), FAST)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("a")  # loop devices are hidden by default
        first = make_loop(size_mb=16)
        await step_to(pilot, app, lambda: first in table(app).visible_names(), "the first")
        assert row_line(app, first).startswith(first)
        # Select it, so the charts and panel are about the device that will vanish.
        assert table(app).select_name(first)
        await wait_for(pilot, lambda: app.main_screen.selected_device == first)
        second = make_loop(size_mb=16)
        await step_to(pilot, app, lambda: second in table(app).visible_names(), "the second")
        detach(first, backing_of(first))
        # A detached loop device stays registered (iostat lists it too); remove it for real,
        # as udev/systemd would (which makes this test serial: tests/conftest.py SERIAL).
        remove_node(first)
        await step_to(pilot, app, lambda: first not in table(app).visible_names(), "it gone")
        assert second in table(app).visible_names()
        assert app.main_screen.selected_device != first
        ticks = app.frames_received
        await step(pilot, app, 2)  # still sampling
        assert app.frames_received == ticks + 2
        assert app.is_running


@pytest.mark.root
async def test_reads_on_a_loop_device_show_up_as_r_per_second(make_loop, tmp_path: Path) -> None:
    app = make_app(Roots(), FAST)
    dev = make_loop(size_mb=32)
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await pilot.press("slash", *dev, "enter")
        # The filter is a substring match: loop1 also shows loop10..loop19 if they exist.
        await step_to(pilot, app, lambda: dev in table(app).visible_names(), "the device")

        def reads_shown() -> bool:
            # Our own device, read with O_DIRECT so the page cache does not hide the reads.
            subprocess.run(
                ["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k", "count=2000", "iflag=direct"],
                check=True,
                capture_output=True,
            )
            value = row_line(app, dev).split()[1]
            return value not in ("-", "0.00")

        await step_to(pilot, app, reads_shown, "reads shown")


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
async def test_two_thousand_synthetic_disks_stay_usable(mem_path: Path) -> None:
    """2,000 disks, stepped frame by frame: the frames the test needs, not one every 0.25 s
    for as long as the machine is slow (the tree is in memory: 30,000 files)."""
    tree = SyntheticTree(mem_path, 2000)
    app = make_app(tree.roots, Config(interval=0.25))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.sampler_thread is not None, "the sampler", timeout=30)
        await step_to(pilot, app, lambda: app.frames_received >= 1, "a frame", timeout=30)
        tree.advance(1.0)
        await step_to(pilot, app, lambda: app.frames_received >= 3, "3 frames", timeout=30)
        assert len(table(app).visible_names()) == 2000
        await pilot.press("end")
        assert app.main_screen.selected_device == tree.names[-1]
        await pilot.press("greater_than_sign")
        seen: list[list[float]] = []
        advanced_at = -1

        def a_tick_with_rates() -> bool:
            """The first 50 rows' r/s when the shown tick has rates; else move the counters."""
            nonlocal advanced_at
            names = table(app).visible_names()
            frame = app.latest_frame  # sorted busiest first, figures from the same frame
            assert frame is not None
            rates = frame.rates
            shown = [r.r_s for n in names[:50] if (r := rates.get(n)) is not None]
            if len(set(shown)) > 1:  # the synthetic disks differ once counters move
                seen.append(shown)
                return True
            if app.frames_received != advanced_at:
                tree.advance(1.0)
                advanced_at = app.frames_received
            return False

        await step_to(pilot, app, a_tick_with_rates, "a tick with rates", timeout=30)
        assert not app.main_screen.shown.paused
        assert len(seen[0]) == 50 and seen[0] == sorted(seen[0], reverse=True)
        # Only the visible rows were rendered into strips, not all 2,000.
        assert len(table(app)._cache) < 200


async def test_captured_tree_given_by_roots_works_with_the_real_sampler(fixture_roots) -> None:
    app = make_app(fixture_roots("tui_host"), Config(interval=0.25))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot, app)
        assert sorted(table(app).visible_names()) == ["dm-0", "nvme0n1", "sda", "sdb"]
        # A static tree: no I/O between the reads.
        assert row_line(app, "sda").split()[1] == "0.00"


async def test_end_puts_the_last_row_on_screen_not_under_a_scrollbar(tmp_path: Path) -> None:
    """#17 item 11: "End lands on a row under the scrollbar" (the vertical scrollbar narrowed
    the rows, a horizontal scrollbar appeared and covered the last line)."""
    tree = SyntheticTree(tmp_path, 60)
    app = make_app(tree.roots, Config(interval=10.0))
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: app.frames_received >= 1, timeout=30)
        await parts_up(pilot, app)  # keys go to the screen at once, not held till then
        t = table(app)
        t.focus()
        await pilot.press("end")
        await pilot.pause()
        assert not t.show_horizontal_scrollbar
        visible_rows = t.scrollable_content_region.height - t.HEADER_LINES
        assert t.scroll_offset.y <= t.cursor < t.scroll_offset.y + visible_rows
        assert t.cursor == len(t.rows) - 1
