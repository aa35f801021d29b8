"""Health costs nothing until wanted (#26, and #25's headless start): frames without
HEALTH never import the health modules (smartctl, the kernel log, subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.cli import cli_env

TREE = Path(__file__).parents[1] / "fixtures" / "nvme"
HEALTH_MODULES = {
    "iotop_plus.sampling.health.smart",
    "iotop_plus.sampling.health.part",
    "iotop_plus.sampling.health.io_errors",
}


def _loaded(want_health: bool) -> set[str]:
    code = f"""
import json, sys
from iotop_plus.roots import Roots
from iotop_plus.sampling.health.gate import HEALTH
from iotop_plus.sampling.frame.live import LiveSource
source = LiveSource(Roots.resolve({str(TREE / "proc")!r}, {str(TREE / "sys")!r}))
source.want(HEALTH, {want_health})
source.next_frame(); source.next_frame(); source.close()
print(json.dumps(sorted(sys.modules)))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), check=True
    )
    return set(json.loads(done.stdout))


def test_frames_without_health_load_none_of_its_modules() -> None:
    assert not HEALTH_MODULES & _loaded(False)
    assert _loaded(True) >= HEALTH_MODULES
