"""Issue #23 item 1: a setting change reaches the TUI's chart marks, the recording and the
exporter's output through the frame alone (the journal part of ``LiveSource``), with nobody
else tailing the journal.

A real ``iotop-plus set`` on a loop device the test made, with the recorder (the real console
module) running beside a Pilot TUI and an exporter sampler on the same state directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iotop_plus.config import Config
from iotop_plus.export.collector import FrameCollector
from iotop_plus.export.view import ExportSampler
from iotop_plus.record.timeline import open_timeline
from iotop_plus.roots import Roots
from iotop_plus.sampling.frame.sources import live_source
from iotop_plus.state import StateDir
from iotop_plus.tui.app import make_app
from tests.support.queue_guard import restored_queue
from tests.support.wait import holds_within, wait_for

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    """A fresh loop device whose queue settings are restored after the test."""
    name = make_loop(32)
    with restored_queue(name):
        yield name


def cli(state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), *args]


async def test_a_setting_change_reaches_marks_recording_and_exporter_through_the_frame(
    loop: str, tmp_path: Path
) -> None:
    state_dir = tmp_path / "iotop-plus"
    state = StateDir(state_dir)
    state.fd()  # made 0700 now: the recorder, the TUI and the exporter share it
    recordings = tmp_path / "recordings"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    recorder = subprocess.Popen(
        cli(state_dir, "record", "--dir", str(recordings), "-i", "0.2", "--processes", "0"),
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/",
    )
    try:
        assert recorder.stderr is not None
        assert "recording every" in recorder.stderr.readline()  # its tails start before this
        exporter = ExportSampler(
            live_source(Roots(), journal=state, journal_history=True), 1.0, show_all=True
        )
        collector = FrameCollector(exporter.view)
        exporter.step()
        source = live_source(Roots(), journal=state)
        app = make_app(Roots(), Config(interval=0.25, show_all=True), source=source)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_for(pilot, lambda: app.frames_received >= 2, "two frames")
            done = subprocess.run(
                cli(state_dir, "set", loop, "read_ahead_kb=16"),
                capture_output=True,
                text=True,
                env=env,
                cwd="/",
                timeout=60,
            )
            assert done.returncode == 0, done.stderr

            # The TUI: the frame's setting event is a chart mark on the device.
            def marked() -> bool:
                return any(m.device == loop and "→16" in m.label for m in app.store.chart_marks)

            await wait_for(pilot, marked, "the change's mark on the charts")
            mark = next(m for m in app.store.chart_marks if m.device == loop)
            assert mark.label.startswith("read_ahead_kb ")
            assert mark.timestamp <= time.time()  # on the wall clock

        # The exporter: counted from the frame's event; the queue part was re-read with it.
        view = exporter.step()
        assert view.changes.get((loop, "read_ahead_kb")) == 1
        assert view.queues[loop].values["read_ahead_kb"] == 16
        body = collector.render(None)[0].decode()
        assert (
            f'iotop_plus_setting_changes_total{{device="{loop}",setting="read_ahead_kb"}} 1.0'
            in body
        )
        assert f'iotop_plus_disk_read_ahead_bytes{{device="{loop}"}} 16384.0' in body
        exporter.stop()

        # The recording: the journal line, unchanged, as an event of a sample.
        def recorded() -> list[dict]:
            try:
                timeline = open_timeline(recordings)
            except (OSError, ValueError):
                return []
            try:
                span = timeline.span()
                if span is None:
                    return []
                return [
                    e["record"]
                    for rs, _frame in timeline.frames(*span)
                    for e in rs.events
                    if e.get("source") == "changes" and e["record"].get("device") == loop
                ]
            finally:
                timeline.close()

        assert holds_within(lambda: any(r.get("record") == "change" for r in recorded()), 20)
        change = next(r for r in recorded() if r.get("record") == "change")
        assert (change["setting"], change["effective"]) == ("read_ahead_kb", "16")
    finally:
        recorder.terminate()
        recorder.wait(10)
        state.close()
