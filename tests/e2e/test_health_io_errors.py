"""Real I/O errors (#26): a loop device on a file in a 4 MiB tmpfs, made by the test, whose
writes past the space left fail in the kernel ("critical space allocation error, dev loopN").
The errors appear with the device and their count as events and marks in the TUI, in
``snapshot --health`` JSON and in ``serve``'s ``iotop_plus_disk_io_errors_total``.
Everything (the writes, the mount, the loop device) is the test's own and is removed."""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.config import Config
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY, FrameEvent
from iotop_plus.sampling.health.gate import HEALTH, HealthPart
from iotop_plus.tui.app import make_app
from iotop_plus.tui.widgets.charts import DeviceCharts
from iotop_plus.tui.widgets.device_panel import DevicePanel
from tests.support.cli import cli_argv, cli_env, serve
from tests.support.loopdev import loop_device, require_loop_devices
from tests.support.wait import holds_within
from tests.tui.helpers import row_line, started, table, wait_for

pytestmark = [pytest.mark.root, pytest.mark.slow]

TMPFS_MB = 4
LOOP_MB = 32
CHUNK = 64 * 1024


@pytest.fixture
def failing_loop(tmp_path: Path) -> Iterator[str]:
    """A loop device whose backing file sits on a 4 MiB tmpfs: writes past it fail."""
    require_loop_devices()
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m,mode=0700", "tmpfs", str(mnt)],
        check=True,
    )
    try:
        with loop_device(mnt, size_mb=LOOP_MB) as dev:
            yield dev
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


class FailingWrites:
    """Direct writes to the test's loop device, past the tmpfs' space, until stopped."""

    def __init__(self, dev: str) -> None:
        self.dev = dev
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        fd = os.open(f"/dev/{self.dev}", os.O_WRONLY | os.O_DIRECT)
        block = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT wants
        try:
            offset = (TMPFS_MB + 8) * 1024 * 1024  # beyond what the tmpfs can hold
            while not self._stop.wait(0.05):
                try:
                    os.pwrite(fd, block, offset)
                except OSError:
                    self.failed += 1
                offset = (offset + CHUNK) % (LOOP_MB * 1024 * 1024) or CHUNK
        finally:
            os.close(fd)
            block.close()

    def __enter__(self) -> FailingWrites:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)


async def test_tui_shows_the_errors_as_marks_a_count_and_a_severity_mark(
    failing_loop: str,
) -> None:
    dev = failing_loop
    app = make_app(Roots(), Config(interval=0.25), devices=(dev,))
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        await wait_for(pilot, lambda: dev in table(app).visible_names(), "the loop row")
        app.main_screen.select_device(dev)
        panel = app.main_screen.query_one(DevicePanel)
        # The error count comes with the frames, the health reading from its own worker: both
        # are shown, and the health line says once why there is no health.
        await wait_for(pilot, lambda: "I/O errors: 0 since start (kmsg)" in panel.text)
        await wait_for(pilot, lambda: "health: none: loop: " in panel.text, "the health line")
        with FailingWrites(dev) as writes:
            # the kernel log is rate-limited, so its count is a lower bound
            found = re.compile(r"I/O errors: ≥ ([1-9][\d,]*) since start \(kmsg\)")
            await wait_for(pilot, lambda: found.search(panel.text), "errors counted", 20)
        assert writes.failed > 0
        await wait_for(pilot, lambda: row_line(app, dev).startswith(f"!{dev}"), "the mark")
        assert "I/O errors since start" in table(app).marks[dev]
        charts = app.main_screen.query_one(DeviceCharts)
        await wait_for(pilot, lambda: charts.marks_drawn, "a chart mark", 20)
        labels = [m.label for m in charts.marks_drawn]
        assert any(f"on {dev}" in label and "error" in label for label in labels), labels
        assert any("space allocation" in label for label in labels), labels


def test_snapshot_health_json_has_the_error_events_and_count(
    failing_loop: str, tmp_path: Path
) -> None:
    dev = failing_loop
    # 8 s: longer than the kernel's 5 s rate-limit window of these log lines (10 a window)
    argv = cli_argv("snapshot", "-i", "8", "-c", "1", "-f", "json", "--health", dev, state=tmp_path)
    with FailingWrites(dev):
        done = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"]
    errors = [e for e in entry["events"] if e["kind"] == "io-error"]
    assert errors and all(e["device"] == dev for e in errors), entry["events"]
    assert any("critical space allocation error" in e["text"] for e in errors)
    (disk,) = entry["disk"]
    assert disk["disk_device"] == dev
    assert disk["health"]["io_errors"] >= len(errors) > 0
    assert disk["health"]["reason"].startswith("loop: ")


def test_serve_exports_the_errors_per_device(failing_loop: str, tmp_path: Path) -> None:
    dev = failing_loop
    pattern = re.compile(rf'iotop_plus_disk_io_errors_total{{device="{dev}"}} (\d+(?:\.\d+)?)')

    def count(port: int) -> float:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                body = r.read().decode()
            found = pattern.search(body)
            return float(found.group(1)) if found else -1.0
        return -1.0

    with serve("--all", state=tmp_path, interval="0.5") as port:
        assert holds_within(lambda: count(port) == 0.0, 20)  # counted, none yet
        with FailingWrites(dev):
            assert holds_within(lambda: count(port) > 0, 30)


def test_while_the_tracer_runs_block_rq_error_counts_every_failed_request(
    failing_loop: str,
) -> None:
    """With latency wanted, the tracer's ``block_rq_error`` counts the errors (exactly, not
    rate-limited like the kernel log), as the same events and counts."""
    dev = failing_loop
    source = LiveSource(Roots())
    source.want(LATENCY, True)
    source.want(HEALTH, True)
    try:
        assert source.wait_latency(30), "the tracer did not start"
        frame = source.next_frame()
        assert frame.get(HealthPart) is not None
        with FailingWrites(dev) as writes:
            assert holds_within(lambda: writes.failed >= 20, 30)
        events: list[FrameEvent] = []

        def counted() -> bool:
            frame = source.next_frame()
            events.extend(e for e in frame.events if e.kind == "io-error")
            health = frame.get(HealthPart)
            assert health is not None and health.io_error_source == "tracer"
            return (health.io_errors or {}).get(dev, 0) >= writes.failed

        assert holds_within(counted, 10)
        assert events and {e.device for e in events} == {dev}
        assert all("critical space allocation error" in e.text for e in events)
    finally:
        source.close()


def test_recorded_errors_come_back_in_replay(failing_loop: str, tmp_path: Path) -> None:
    """``record`` keeps the io-error events and the health part (type H); ``snapshot --from
    --health`` gives them back with the device and the count."""
    dev = failing_loop
    rec = tmp_path / "rec"
    argv = cli_argv("record", "--dir", str(rec), "-i", "0.5", "--processes", "0", state=tmp_path)
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=cli_env())
    argv = cli_argv("snapshot", "--from", str(rec), "-f", "json", "--health", dev, state=tmp_path)
    stats: list[dict[str, Any]] = []

    def recorded() -> bool:
        """Whether the recording so far holds an io-error event (read as it is written)."""
        done = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), timeout=60)
        assert done.returncode == 0, done.stderr
        stats[:] = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"]
        return any(e["kind"] == "io-error" for s in stats for e in s["events"])

    try:
        assert holds_within(lambda: any(rec.glob("*.rec")), 20), "record did not start"
        # Writes fail until the recording holds their event: without the tracer the recorder
        # learns of them from the kernel log, whose rate limit (10 lines in 5 s, host-wide) an
        # earlier test may have used up.
        with FailingWrites(dev) as writes:
            assert holds_within(lambda: writes.failed >= 10 and recorded(), 30)
        assert holds_within(lambda: proc.poll() is None, 1.0)  # still recording
    finally:
        proc.terminate()
        assert proc.wait(20) == 0, proc.stderr.read() if proc.stderr else ""
    assert recorded()
    events = [e for s in stats for e in s["events"] if e["kind"] == "io-error"]
    assert events and {e["device"] for e in events} == {dev}
    last = stats[-1]["disk"][0]["health"]
    assert last["io_errors"] > 0 and last["reason"].startswith("loop: ")
