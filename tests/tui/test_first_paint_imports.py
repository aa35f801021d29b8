"""The console script's way to the first figures imports what the header and the device table
need, and nothing of what comes later: the recorder's encoding and decoding modules (the
frame store loads them with its first closed chunk and its first look-up of one), the frame
parts nobody reads yet, ``snapshot``'s output, the history keys' comparison, the Device
tab's health lines and verdict, the charts and the side panel, the tuner and its journal,
the throttle check's cgroup reader, the TOML reader without a config file; and the styles
of what comes later (``later.tcss``) are not parsed yet.
Counted, not timed: each took a share of the start (docs/performance.md). (The health
reader's modules load with the first frame that reads it: the primed one, when the screen
is up within 0.1 s of the first frame.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.tui.canned import HOST_ROOTS

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import gc, json, sys
from textual.app import App
from iotop_plus.tui.app import IotopPlusApp
from iotop_plus.tui.screens.later_parts import LaterParts

seen = {}

def after_first_paint(self):
    seen["modules"] = sorted(sys.modules)
    seen["collector_on"] = gc.isenabled()
    sources = self.screen.app.stylesheet.source  # (the spy imports no module of ours)
    seen["later_css"] = any(path.endswith("later.tcss") for path, _ in sources)
    self.screen.app.exit()

def run(self, *args, **kwargs):
    return App.run(self, headless=True, size=(120, 36))

LaterParts.after_first_paint = after_first_paint
IotopPlusApp.run = run
import time
late = time.time() % 60
if late > 55:  # the first two frames in one minute (else the store closes its chunk)
    time.sleep(60.05 - late)  # to the next minute's start, not a guess
from iotop_plus.cli import main
code = main(sys.argv[1:])
print(json.dumps(seen))
"""

NOT_ON_THE_WAY = (
    "iotop_plus.record.chunks",  # the frame store's encoding and decoding
    "iotop_plus.record.collect",
    "iotop_plus.record.stream",
    "iotop_plus.record.recorded_frame",
    "iotop_plus.record.store_encode",
    "iotop_plus.record.store_decode",
    "iotop_plus.tui.diff_view",  # the history keys' comparison
    "iotop_plus.record.diff_report",
    "iotop_plus.commands.snapshot_output",  # snapshot's output (the devices named are checked)
    "iotop_plus.sampling.sync.part",  # frame parts nobody reads yet
    "iotop_plus.sampling.sync.jbd2_part",
    "iotop_plus.sampling.latency.program",
    "iotop_plus.sampling.latency.hist_part",
    "iotop_plus.tui.health_lines",  # the Device tab's health lines
    "iotop_plus.sampling.files.part",
    "iotop_plus.sampling.blocked.part",
    "iotop_plus.tui.widgets.charts",  # mounted after the first paint
    "iotop_plus.tui.widgets.braille_chart",
    "iotop_plus.tui.widgets.device_panel",
    "iotop_plus.devices.tuner",  # the tuner, made at the first key, quit or restore offer
    "iotop_plus.devices.journal",
    "iotop_plus.devices.settings",
    "iotop_plus.tui.lifecycle",
    "iotop_plus.sampling.cgroups.reader",  # the throttle check, once the Device tab is up
    "iotop_plus.why.diagnosis",  # no verdict before the Device tab is up
    "iotop_plus.why.quiet_history",
    "tomllib",  # no config file
    "secrets",  # (a run id takes os.urandom's bytes)
)

MOST_OF_OURS = 104
"""Our modules loaded before the first paint, at most (98 on the fixture host, 104 when the
primed frame read the health part, as a loaded host makes it): a new one on the way is worth
a look at its cost."""


def test_the_first_paint_loads_only_what_the_header_and_table_need(tmp_path: Path) -> None:
    argv = [
        "--proc-root",
        str(HOST_ROOTS.proc),
        "--sys-root",
        str(HOST_ROOTS.sys),
        "--state-dir",
        str(tmp_path / "state"),
        "-i",
        "10",  # no frame read after the first two before the paint, however slow the start
        "sda",  # a device named: checked before the screen starts
    ]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    modules = seen["modules"]
    assert "iotop_plus.tui.widgets.device_table" in modules  # the spy saw the first paint
    loaded = [m for m in NOT_ON_THE_WAY if m in modules]
    assert not loaded, f"imported before the first paint: {loaded}"
    ours = [m for m in modules if m.startswith("iotop_plus")]
    assert len(ours) <= MOST_OF_OURS, f"{len(ours)} of our modules before the first paint"
    assert not seen["collector_on"]  # held off through the start (tui/engine/gc_policy.py)
    assert not seen["later_css"]  # the later parts' and the dialogs' styles: parsed after
