"""The latency column set on the live host: `c` to it starts the tracer ("…" until the first
percentiles), the view shows the heatmap and the queue/device split, `c` away stops the
tracer, and quitting leaves none behind."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from rich.text import Text

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.latency.hist import (
    RUNNING,
    DeviceLatency,
    Histogram,
    LatencyFrame,
    OpLatency,
)
from iotop_plus.sampling.latency.program import MARKER
from iotop_plus.tui.app import make_app
from iotop_plus.tui.widgets.latency_view import LatencyView
from tests.support.frames import step_awaiting
from tests.support.wait import holds_within
from tests.tui.helpers import burst, started, table, wait_for


def tracers() -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", f"{MARKER} pid={os.getpid()}( |$)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return [int(p) for p in found.stdout.split()]


@pytest.mark.root
@pytest.mark.slow  # bpftrace on a loop device
async def test_latency_columns_start_and_stop_the_tracer(make_loop) -> None:
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("needs root and bpftrace")
    dev = make_loop(16, direct_io=True)
    app = make_app(Roots(), Config(show_all=True), interval=0.5)
    async with app.run_test(size=(160, 50)) as pilot:
        await started(pilot, app)
        t = table(app)
        assert tracers() == []
        await pilot.press("c", "c")
        await pilot.pause()
        assert t.column_set == "latency"
        assert [c.title for c in t.columns][2:6] == ["r_p50", "r_p99", "r_p99.9", "r_max"]
        view = app.main_screen.query_one(LatencyView)
        assert view.display
        thread = app.sampler_thread
        assert thread is not None
        await step_awaiting(pilot, thread, lambda: len(tracers()) == 1, timeout=15)

        def tracing() -> bool:
            latest = app.feed.latest_frame
            return bool(latest and latest.latency and latest.latency.has_figures)

        await step_awaiting(pilot, thread, tracing, timeout=15)
        # reads on the loop device, then its percentiles in the table
        subprocess.run(
            ["dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k", "count=2000", "iflag=direct"],
            check=True,
            capture_output=True,
        )
        t.select_name(dev)

        def shown() -> bool:
            latest = app.feed.latest_frame
            lat = latest.latency if latest else None
            return bool(lat and lat.state == RUNNING and dev in lat.devices)

        await step_awaiting(pilot, thread, shown, timeout=15)
        await pilot.pause()
        text = str(view.render())
        assert "latency" in text and "time in queue" in text, text
        await pilot.press("c")  # back to basic: the tracer stops
        await pilot.pause()
        assert not view.display
        await step_awaiting(pilot, thread, lambda: tracers() == [], timeout=10)
        await pilot.press("c", "c")  # and latency again: a new tracer
        await step_awaiting(pilot, thread, lambda: len(tracers()) == 1, timeout=15)
        await burst(pilot, "q")  # sent: pilot.press could wait 30 s on a screen that quit
    assert tracers() == []


def test_view_text_shows_starting_failure_and_split() -> None:
    view = LatencyView()
    starting = view.render_text(LatencyFrame("starting", status="starting tracer…"), "sda")
    assert starting.plain == "latency: starting tracer…"
    failed = view.render_text(LatencyFrame("failed", status="latency needs root"), "sda")
    assert "needs root" in failed.plain
    reads = OpLatency(Histogram.of([100_000] * 10), queue_sum_ns=4_000_000, queue_count=10)
    lat = LatencyFrame(RUNNING, {"sda": DeviceLatency({"read": reads})}, span_s=1.0)
    view.record(lat)
    text: Text = view.render_text(lat, "sda")
    assert "time in queue 80 %, in device 20 %" in text.plain
    assert "■" in text.plain and "10" in text.plain


@pytest.mark.root
@pytest.mark.slow  # bpftrace
async def test_config_column_set_latency_starts_with_the_view_and_tracer() -> None:
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("needs root and bpftrace")
    app = make_app(Roots(), Config(column_set="latency"), interval=0.5)
    async with app.run_test(size=(160, 50)) as pilot:
        await started(pilot, app)
        assert table(app).column_set == "latency"
        assert app.main_screen.query_one(LatencyView).display
        await wait_for(pilot, lambda: len(tracers()) == 1, timeout=15)
    assert holds_within(lambda: not tracers(), 5), tracers()  # quitting kills it
